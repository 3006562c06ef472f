/**
 * The management API's user operations on the api role that `startVigil` serves: each operation's
 * success, a validation error by its code, 403 for tokens without scope admin, 404 across
 * environments, 409 on a stale revision, the last admin kept (409 LAST_ADMIN), the audit entry of
 * each change (never a password hash or an MFA secret), and a disabled user refused by the JSON
 * login and the console's sign-in with their sessions and login tokens ended at once.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   response bodies are untyped on purpose: these tests check them at run time. */
import { beforeAll, describe, expect, it } from 'vitest';
import { totpCode } from '../../src/tenancy/secrets.ts';
import { call, type CallResult } from './api-harness.ts';
import { startManagementHarness } from './management-harness.ts';
import { consoleClient, fleetStatus, formToken, signIn } from './console-client.ts';

const PASSWORD = 'correct horse battery';
const NEW_PASSWORD = 'another horse battery';

describe('management API: users', () => {
  let api: string;
  let apiKey: string;
  let admin: string;
  let operator: string;
  let reader: string;
  let otherAdmin: string;

  beforeAll(async () => {
    const m = await startManagementHarness({ credentialCacheMs: 0, consoleSignInPerMinute: 1000 });
    ({ api } = m);
    ({ admin, operator, reader, otherAdmin } = m.tokens);
    apiKey = m.apiKey;
    return () => m.close();
  });

  const post = (path: string, token: string, body: unknown) =>
    call(api, path, { token, body, contentType: 'application/json' });
  const audit = async (env = 'acme') =>
    (await post('/audit/list', env === 'acme' ? admin : otherAdmin, {})).json.data.entries;
  const outcome = (r: CallResult) => [r.status, r.json?.error?.code ?? 'ok'];
  const login = (username: string, password = PASSWORD, totp?: string) =>
    call(api, `/login/${apiKey}`, { body: { username, password, ...(totp ? { totp } : {}) } });
  const loginToken = async (username: string, password = PASSWORD) => {
    const r = await login(username, password);
    expect(outcome(r)).toEqual([200, 'ok']);
    return r.json.data.token as string;
  };
  const read = (token: string) => call(api, '/devices/list', { token });
  const get = async (username: string) =>
    (await post('/users/list', admin, {})).json.data.find(
      (u: { username: string }) => u.username === username,
    );
  /** A console sign-in through the form: its status and whether it set a session cookie. */
  const consoleSignIn = async (username: string, password = PASSWORD) => {
    const c = consoleClient(api);
    const token = await formToken(await c.get('/console/sign-in'));
    const res = await c.post('/console/sign-in', { _csrf: token, env: 'acme', username, password });
    await res.arrayBuffer();
    return [res.status, [...c.jar.keys()].some((k) => k.includes('session'))];
  };

  it('creates users, operators unless a role is given, audited without the password', async () => {
    const r = await post('/users/create', admin, { username: 'olga', password: PASSWORD, role: 'admin' });
    expect(r.status).toBe(200);
    expect(r.json.data).toEqual({
      username: 'olga',
      role: 'admin',
      mfaEnabled: false,
      disabled: false,
      createdUTC: expect.stringMatching(/Z$/),
      revision: 1,
    });
    const op = await post('/users/create', admin, { username: 'oscar', password: PASSWORD });
    expect(op.json.data).toMatchObject({ username: 'oscar', role: 'operator' });
    const [entry] = await audit();
    expect(entry).toMatchObject({
      actor: 'token:automation',
      action: 'user.create',
      target: 'oscar',
      after: { username: 'oscar', role: 'operator', disabled: false, revision: 1 },
    });
    expect(entry.before).toBeUndefined();
    expect(JSON.stringify(entry)).not.toMatch(/scrypt|correct horse|passwordHash/);
    expect((await read(await loginToken('oscar'))).status).toBe(200);

    const listed = (await post('/users/list', admin, {})).json.data;
    expect(listed.map((u: { username: string }) => u.username)).toEqual(['olga', 'oscar']);
    expect(JSON.stringify(listed)).not.toMatch(/scrypt|passwordHash|generation/);
  });

  it('refuses a taken username (409), a short password or bad name (400 INVALID_INPUT), an unknown role', async () => {
    const cases = [
      [{ username: 'olga', password: PASSWORD }, 409, 'ALREADY_EXISTS'],
      [{ username: 'bob', password: 'short' }, 400, 'INVALID_INPUT'],
      [{ username: 'bad name', password: PASSWORD }, 400, 'INVALID_INPUT'],
      [{ username: 'bob', password: PASSWORD, role: 'root' }, 400, 'INVALID_ATTRIBUTE'],
      [{ username: 'bob' }, 400, 'MISSING_ATTRIBUTE'],
    ] as const;
    for (const [body, status, code] of cases) {
      const r = await post('/users/create', admin, body);
      expect([JSON.stringify(body), r.status, r.json.error.code]).toEqual([
        JSON.stringify(body),
        status,
        code,
      ]);
    }
    expect(await get('bob')).toBeUndefined();
  });

  it('changes a role with the revision it was read at, and refuses a stale one with 409 CONFLICT', async () => {
    const { revision } = await get('oscar');
    const token = await loginToken('oscar');
    const r = await post('/users/role', admin, { username: 'oscar', role: 'viewer', revision });
    expect(r.json.data).toMatchObject({ username: 'oscar', role: 'viewer', revision: revision + 1 });
    // The login token follows the role: it still reads, and no longer writes.
    expect((await read(token)).status).toBe(200);
    const ack = await call(api, '/alarms/acknowledge', { token, body: { deviceName: 'device_1_hallway' } });
    expect(outcome(ack)).toEqual([403, 'FORBIDDEN']);
    const stale = await post('/users/role', admin, { username: 'oscar', role: 'operator', revision });
    expect([stale.status, stale.json.error.code, stale.json.error.revision]).toEqual([
      409,
      'CONFLICT',
      revision + 1,
    ]);
    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'user.role',
      target: 'oscar',
      before: { role: 'operator', revision },
      after: { role: 'viewer', revision: revision + 1 },
    });
    // The same role again changes nothing, and is not audited.
    const same = await post('/users/role', admin, { username: 'oscar', role: 'viewer' });
    expect(same.json.data.revision).toBe(revision + 1);
    expect((await audit())[0].id).toBe(entry.id);
    const unknown = await post('/users/role', admin, { username: 'nobody', role: 'viewer' });
    expect(outcome(unknown)).toEqual([404, 'USER_NOT_FOUND']);
  });

  it('disables a user: login and console sign-in refuse them, their tokens and sessions end at once', async () => {
    await post('/users/create', admin, { username: 'dora', password: PASSWORD });
    const token = await loginToken('dora');
    const browser = consoleClient(api);
    await signIn(browser, 'acme', 'dora', PASSWORD);
    expect(await fleetStatus(browser)).toBe(200);
    const { revision } = await get('dora');

    const r = await post('/users/disable', admin, { username: 'dora', revision });
    expect(r.json.data).toMatchObject({ username: 'dora', disabled: true, revision: revision + 1 });
    expect(outcome(await read(token))).toEqual([401, 'UNAUTHORIZED']);
    expect(await fleetStatus(browser)).toBe(303);
    // The right password is told the account is disabled; a wrong one only that it is wrong.
    expect(outcome(await login('dora'))).toEqual([401, 'ACCOUNT_DISABLED']);
    expect(outcome(await login('dora', 'wrong password'))).toEqual([401, 'INVALID_CREDENTIALS']);
    expect(await consoleSignIn('dora')).toEqual([401, false]);
    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'user.disable',
      target: 'dora',
      before: { disabled: false },
      after: { disabled: true },
    });

    const stale = await post('/users/enable', admin, { username: 'dora', revision });
    expect([stale.status, stale.json.error.code]).toEqual([409, 'CONFLICT']);
    const enabled = await post('/users/enable', admin, { username: 'dora', revision: revision + 1 });
    expect(enabled.json.data).toMatchObject({ disabled: false, revision: revision + 2 });
    // What was issued before stays ended; signing in works again.
    expect(outcome(await read(token))).toEqual([401, 'UNAUTHORIZED']);
    expect(await fleetStatus(browser)).toBe(303);
    expect((await read(await loginToken('dora'))).status).toBe(200);
    expect(await consoleSignIn('dora')).toEqual([303, true]);
    expect((await audit())[0]).toMatchObject({ action: 'user.enable', after: { disabled: false } });
  });

  it('keeps the last admin who can sign in (409 LAST_ADMIN), even from themselves', async () => {
    // olga is acme's only admin.
    const olga = await loginToken('olga');
    for (const [path, body] of [
      ['/users/disable', { username: 'olga' }],
      ['/users/role', { username: 'olga', role: 'operator' }],
      ['/users/delete', { username: 'olga' }],
    ] as const) {
      for (const token of [admin, olga]) {
        const r = await post(path, token, body);
        expect([path, r.status, r.json.error.code]).toEqual([path, 409, 'LAST_ADMIN']);
      }
    }
    expect(await get('olga')).toMatchObject({ role: 'admin', disabled: false, revision: 1 });
    // A disabled admin does not count; an enabled second one does.
    await post('/users/create', admin, { username: 'adam', password: PASSWORD, role: 'admin' });
    await post('/users/disable', olga, { username: 'adam' });
    const still = await post('/users/role', olga, { username: 'olga', role: 'operator' });
    expect(outcome(still)).toEqual([409, 'LAST_ADMIN']);
    await post('/users/enable', olga, { username: 'adam' });
    const demoted = await post('/users/role', olga, { username: 'olga', role: 'operator' });
    expect(demoted.json.data).toMatchObject({ username: 'olga', role: 'operator' });
    const [entry] = await audit();
    expect(entry).toMatchObject({ actor: 'olga', action: 'user.role', target: 'olga' });
    // adam is now the last one.
    const adamLast = await post('/users/delete', admin, { username: 'adam' });
    expect(outcome(adamLast)).toEqual([409, 'LAST_ADMIN']);
  });

  it('sets a password: the old one and what it issued end, the new one signs in, audited without it', async () => {
    const token = await loginToken('oscar');
    const r = await post('/users/password', admin, { username: 'oscar', password: NEW_PASSWORD });
    expect(r.json.data).toMatchObject({ username: 'oscar' });
    expect(outcome(await read(token))).toEqual([401, 'UNAUTHORIZED']);
    expect(outcome(await login('oscar'))).toEqual([401, 'INVALID_CREDENTIALS']);
    expect((await read(await loginToken('oscar', NEW_PASSWORD))).status).toBe(200);
    const short = await post('/users/password', admin, { username: 'oscar', password: 'short' });
    expect(outcome(short)).toEqual([400, 'INVALID_INPUT']);
    const [entry] = await audit();
    expect(entry).toMatchObject({ action: 'user.password', target: 'oscar' });
    expect(entry.before.revision + 1).toBe(entry.after.revision);
    expect(JSON.stringify(entry)).not.toMatch(/scrypt|another horse|passwordHash/);
  });

  it('enables MFA with the otpauth URI once, and resets it; the audit keeps no secret', async () => {
    const r = await post('/users/enableMfa', admin, { username: 'dora' });
    expect(r.status).toBe(200);
    const uri = r.json.data.otpauthUri as string;
    expect(uri).toMatch(/^otpauth:\/\/totp\/Vigil:acme%3Adora\?\S*secret=[A-Z2-7]+/);
    expect(r.json.data.user).toMatchObject({ username: 'dora', mfaEnabled: true });
    const secret = new URL(uri).searchParams.get('secret') ?? '';
    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'user.enable-mfa',
      target: 'dora',
      before: { mfaEnabled: false },
      after: { mfaEnabled: true },
    });
    expect(JSON.stringify(entry)).not.toContain(secret);
    expect(JSON.stringify(await audit())).not.toContain(secret);
    expect(outcome(await login('dora'))).toEqual([401, 'MFA_REQUIRED']);
    expect(outcome(await login('dora', PASSWORD, totpCode(secret, Date.now())))).toEqual([200, 'ok']);
    const again = await post('/users/enableMfa', admin, { username: 'dora' });
    expect(outcome(again)).toEqual([409, 'ALREADY_EXISTS']);

    const reset = await post('/users/resetMfa', admin, { username: 'dora' });
    expect(reset.json.data).toMatchObject({ username: 'dora', mfaEnabled: false });
    expect(outcome(await login('dora'))).toEqual([200, 'ok']);
    expect((await audit())[0]).toMatchObject({
      action: 'user.reset-mfa',
      before: { mfaEnabled: true },
      after: { mfaEnabled: false },
    });
  });

  it('deletes a user: their login tokens end, audited with what they were', async () => {
    const token = await loginToken('dora');
    const r = await post('/users/delete', admin, { username: 'dora' });
    expect(r.json.data).toEqual({ username: 'dora', deleted: true });
    expect(outcome(await read(token))).toEqual([401, 'UNAUTHORIZED']);
    const again = await post('/users/delete', admin, { username: 'dora' });
    expect(outcome(again)).toEqual([404, 'USER_NOT_FOUND']);
    const [entry] = await audit();
    expect(entry).toMatchObject({ action: 'user.delete', target: 'dora', before: { username: 'dora' } });
    expect(entry.after).toBeUndefined();
  });

  it('answers 403 FORBIDDEN to tokens without scope admin, and an operator’s login token too', async () => {
    const paths = [
      '/users/create',
      '/users/list',
      '/users/role',
      '/users/disable',
      '/users/enable',
      '/users/delete',
      '/users/password',
      '/users/resetMfa',
      '/users/enableMfa',
    ];
    const olgaOperator = await loginToken('olga');
    for (const token of [operator, reader, olgaOperator]) {
      for (const path of paths) {
        const r = await post(path, token, { username: 'oscar' });
        expect([path, r.status, r.json.error.code]).toEqual([path, 403, 'FORBIDDEN']);
      }
    }
  });

  it("never reaches another environment's users (404, as if they did not exist)", async () => {
    for (const [path, body] of [
      ['/users/role', { username: 'oscar', role: 'admin' }],
      ['/users/disable', { username: 'oscar' }],
      ['/users/password', { username: 'oscar', password: NEW_PASSWORD }],
      ['/users/resetMfa', { username: 'oscar' }],
      ['/users/enableMfa', { username: 'oscar' }],
      ['/users/delete', { username: 'oscar' }],
    ] as const) {
      const r = await post(path, otherAdmin, body);
      expect([path, r.status, r.json.error.code]).toEqual([path, 404, 'USER_NOT_FOUND']);
    }
    expect((await post('/users/list', otherAdmin, {})).json.data).toEqual([]);
    expect(await get('oscar')).toMatchObject({ role: 'viewer', disabled: false });
    expect(await audit('other')).toEqual([]);
  });

  it('describes every operation in the OpenAPI document, POST only', async () => {
    const doc = (await call(api, '/openapi.json')).json;
    for (const path of [
      '/users/create',
      '/users/list',
      '/users/role',
      '/users/disable',
      '/users/enable',
      '/users/delete',
      '/users/password',
      '/users/resetMfa',
      '/users/enableMfa',
    ]) {
      expect(Object.keys(doc.paths[path])).toEqual(['post']);
      expect(doc.paths[path].post.security).toEqual([{ bearer: [] }]);
    }
    expect(doc.paths['/users/role'].post.responses['409']).toBeDefined();
  });
});
