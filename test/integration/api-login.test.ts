/**
 * `POST /login/<API_KEY>` (docs/interface.md#login): tokens for the key's environment, their expiry, MFA
 * with TOTP codes, the lockout after repeated failures, and revocation through the token cache.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument --
   response bodies are untyped on purpose: these tests check them at run time. */
import { request } from 'node:http';
import { Secret, TOTP } from 'otpauth';
import { describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { call, startApiHarness } from './api-harness.ts';

const PASSWORD = 'correct horse battery';

async function withUser(overrides: Parameters<typeof startApiHarness>[0] = {}) {
  const h = await startApiHarness(overrides);
  const { apiKey } = await h.seedEnvironment('demo');
  await h.admin.createUser('demo', 'alice', PASSWORD);
  const login = (body: unknown, key = apiKey) => call(h.baseUrl, `/login/${key}`, { body });
  /** A login from a given source address (any 127.x.y.z is on the loopback interface). */
  const loginFrom = (localAddress: string, body: unknown) =>
    post(h.baseUrl, `/login/${apiKey}`, body, { localAddress });
  /** A login that says, in X-Forwarded-For, that it was forwarded for `client`. */
  const loginFor = (client: string, body: unknown) =>
    call(h.baseUrl, `/login/${apiKey}`, { body, headers: { 'x-forwarded-for': client } });
  return { h, apiKey, login, loginFrom, loginFor };
}

/** POST over node:http, which (unlike fetch) can choose the local address of the connection. */
function post(
  baseUrl: string,
  path: string,
  body: unknown,
  opts: { localAddress: string },
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
): Promise<{ status: number; retryAfter: string | undefined; json: any }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${baseUrl}${path}`,
      { method: 'POST', localAddress: opts.localAddress, headers: { 'content-type': 'application/json' } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            retryAfter: res.headers['retry-after'],
            json: JSON.parse(text),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/**
 * A lock long enough that three failed logins and a refused one fit in it on a loaded machine,
 * and short enough to wait out.
 */
const LOCK_SECONDS = 10;

const WRONG = { username: 'alice', password: 'wrong password' };
const RIGHT = { username: 'alice', password: PASSWORD };

describe('login', () => {
  it('gives a vt_ token for the API key’s environment that reads that environment', async () => {
    const { h, login } = await withUser({ loginTokenTtlSeconds: 3600 });
    const before = Date.now();
    const res = await login({ username: 'alice', password: PASSWORD });
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('success');
    expect(Object.keys(res.json.data).sort()).toEqual(['expiresUTC', 'token']);
    expect(res.json.data.token).toMatch(/^vt_/);
    const expires = Date.parse(res.json.data.expiresUTC);
    expect(expires).toBeGreaterThanOrEqual(before + 3600_000 - 1000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 3600_000 + 1000);
    const devices = await call(h.baseUrl, '/devices/list', { token: res.json.data.token });
    expect(devices.status).toBe(200);
    expect(devices.json.data).toHaveLength(3);
  });

  it('refuses wrong credentials, an unknown key and missing attributes', async () => {
    const { login } = await withUser();
    const wrong = await login({ username: 'alice', password: 'wrong password' });
    expect([wrong.status, wrong.json.error.code]).toEqual([401, 'INVALID_CREDENTIALS']);
    const nobody = await login({ username: 'bob', password: PASSWORD });
    expect([nobody.status, nobody.json.error.code]).toEqual([401, 'INVALID_CREDENTIALS']);
    const badKey = await login({ username: 'alice', password: PASSWORD }, 'vk_unknown_key_0000000000000000');
    expect([badKey.status, badKey.json.error.code]).toEqual([401, 'INVALID_API_KEY']);
    const missing = await login({ username: 'alice' });
    expect([missing.status, missing.json.error.code, missing.json.error.attribute]).toEqual([
      400,
      'MISSING_ATTRIBUTE',
      'password',
    ]);
  });

  it('answers GET on the login path with 405, so passwords never travel in URLs', async () => {
    const { h, apiKey } = await withUser();
    const res = await call(h.baseUrl, `/login/${apiKey}`, { query: 'username=alice' });
    expect([res.status, res.json.error.code]).toEqual([405, 'METHOD_NOT_ALLOWED']);
  });

  it('requires a valid TOTP code once MFA is enabled', async () => {
    const { h, login } = await withUser();
    const { secret } = await h.admin.enableMfa('demo', 'alice');
    const totp = new TOTP({ algorithm: 'SHA1', digits: 6, period: 30, secret: Secret.fromBase32(secret) });
    const without = await login({ username: 'alice', password: PASSWORD });
    expect([without.status, without.json.error.code]).toEqual([401, 'MFA_REQUIRED']);
    const code = totp.generate();
    const wrongCode = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
    const wrong = await login({ username: 'alice', password: PASSWORD, totp: wrongCode });
    expect([wrong.status, wrong.json.error.code]).toEqual([401, 'INVALID_CREDENTIALS']);
    const ok = await login({ username: 'alice', password: PASSWORD, totp: totp.generate() });
    expect(ok.status).toBe(200);
    expect(ok.json.data.token).toMatch(/^vt_/);
  });

  it('locks a username after repeated failures with 429 LOGIN_LOCKED and Retry-After, then lets it in again', async () => {
    const { login } = await withUser({ loginMaxFailures: 3, loginLockSeconds: LOCK_SECONDS });
    const startedMs = Date.now();
    const failures: [number, string][] = [];
    for (let i = 0; i < 3; i++) {
      const failed = await login(WRONG);
      failures.push([failed.status, failed.json.error.code]);
    }
    const locked = await login(RIGHT);
    // The failures were counted, and the lock seen, within one window however slow the host.
    expect(Date.now() - startedMs, 'the set-up took longer than the lock').toBeLessThan(LOCK_SECONDS * 1000);
    expect(failures).toEqual(Array(3).fill([401, 'INVALID_CREDENTIALS']));
    expect([locked.status, locked.json.error.code]).toEqual([429, 'LOGIN_LOCKED']);
    const retryAfter = Number(locked.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(LOCK_SECONDS);
    // The lock ends after its seconds; refused attempts meanwhile do not extend it.
    const refused: number[] = [];
    await eventually(() => login(RIGHT), {
      until: (r) => {
        if (r.status !== 200) refused.push(r.status);
        return r.status === 200;
      },
      timeoutMs: LOCK_SECONDS * 1000 + 10_000,
      intervalMs: 100,
      message: 'the lock to end',
    });
    expect(refused.filter((status) => status !== 429)).toEqual([]);
  });

  it('verifies no more than VIGIL_LOGIN_MAX_FAILURES passwords when 200 wrong logins arrive at once', async () => {
    const { login, loginFrom } = await withUser({ loginMaxFailures: 5 });
    const answers = await Promise.all(Array.from({ length: 200 }, () => login(WRONG)));
    const statuses = answers.map((a) => a.status);
    // Each 401 is one password checked; every other attempt was refused before its check.
    expect(statuses.filter((s) => s === 401).length).toBeLessThanOrEqual(5);
    expect(statuses.filter((s) => s === 429)).toHaveLength(200 - statuses.filter((s) => s === 401).length);
    expect(answers.find((a) => a.status === 429)?.json.error.code).toBe('LOGIN_LOCKED');
    // The barrage came from 127.0.0.1; the user still signs in from elsewhere.
    expect((await loginFrom('127.0.0.2', RIGHT)).status).toBe(200);
  });

  it('locks a username only for the address its failures came from', async () => {
    const { loginFrom } = await withUser({ loginMaxFailures: 3 });
    for (let i = 0; i < 3; i++) expect((await loginFrom('127.0.0.3', WRONG)).status).toBe(401);
    const locked = await loginFrom('127.0.0.3', RIGHT);
    expect([locked.status, locked.json.error.code]).toEqual([429, 'LOGIN_LOCKED']);
    expect(Number(locked.retryAfter)).toBeGreaterThanOrEqual(1);
    expect((await loginFrom('127.0.0.4', RIGHT)).status).toBe(200);
  });

  it('ignores X-Forwarded-For unless VIGIL_TRUST_PROXY trusts the proxy', async () => {
    const { loginFor } = await withUser({ loginMaxFailures: 3 });
    for (let i = 0; i < 3; i++) expect((await loginFor('198.51.100.1', WRONG)).status).toBe(401);
    // The header is anyone's to write: the failures counted for the socket's address, 127.0.0.1.
    expect((await loginFor('198.51.100.2', RIGHT)).status).toBe(429);
  });

  it('takes the client address from X-Forwarded-For sent by a trusted proxy', async () => {
    const { login, loginFor } = await withUser({ loginMaxFailures: 3, trustProxy: 'loopback' });
    for (let i = 0; i < 3; i++) expect((await loginFor('198.51.100.1', WRONG)).status).toBe(401);
    expect((await loginFor('198.51.100.1', RIGHT)).status).toBe(429);
    // What a proxy appends after what the client sent is what counts.
    expect((await loginFor('198.51.100.2', RIGHT)).status).toBe(200);
    expect((await loginFor('198.51.100.2, 198.51.100.1', RIGHT)).status).toBe(429);
    expect((await login(RIGHT)).status).toBe(200);
  });

  it('locks a username for everyone after VIGIL_LOGIN_MAX_FAILURES_PER_USER failures from all addresses', async () => {
    const { loginFor } = await withUser({
      loginMaxFailures: 3,
      loginMaxFailuresPerUser: 5,
      trustProxy: 'loopback',
    });
    for (const client of ['198.51.100.1', '198.51.100.1', '198.51.100.1', '198.51.100.2', '198.51.100.2'])
      expect((await loginFor(client, WRONG)).status).toBe(401);
    const locked = await loginFor('198.51.100.3', RIGHT);
    expect([locked.status, locked.json.error.code]).toEqual([429, 'LOGIN_LOCKED']);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
  });

  it('locks an address for every username after VIGIL_LOGIN_MAX_FAILURES_PER_ADDRESS failures', async () => {
    const { h, loginFor } = await withUser({ loginMaxFailuresPerAddress: 4, trustProxy: 'loopback' });
    await h.admin.createUser('demo', 'bob', PASSWORD);
    for (const username of ['carol', 'dave', 'erin', 'frank'])
      expect((await loginFor('198.51.100.1', { username, password: PASSWORD })).status).toBe(401);
    expect((await loginFor('198.51.100.1', RIGHT)).status).toBe(429);
    expect((await loginFor('198.51.100.1', { username: 'bob', password: PASSWORD })).status).toBe(429);
    expect((await loginFor('198.51.100.2', RIGHT)).status).toBe(200);
    // An IPv6 client counts as its /64.
    for (const username of ['carol', 'dave', 'erin', 'frank'])
      expect((await loginFor('2001:db8:1:2::10', { username, password: PASSWORD })).status).toBe(401);
    expect((await loginFor('2001:db8:1:2:ffff::1', RIGHT)).status).toBe(429);
    expect((await loginFor('2001:db8:1:3::10', RIGHT)).status).toBe(200);
  });

  it('clears the failures of a username from an address when it signs in from there', async () => {
    const { login } = await withUser({ loginMaxFailures: 3 });
    for (let round = 0; round < 3; round++) {
      expect((await login(WRONG)).status).toBe(401);
      expect((await login(WRONG)).status).toBe(401);
      expect((await login(RIGHT)).status).toBe(200);
    }
  });

  it('stops accepting a login token once it expires, even while it is cached', async () => {
    const { h, login } = await withUser({ loginTokenTtlSeconds: 1, credentialCacheMs: 60_000 });
    const { token } = (await login({ username: 'alice', password: PASSWORD })).json.data;
    expect((await call(h.baseUrl, '/devices/list', { token })).status).toBe(200);
    // Expiry comes a second (the setting's unit) after the login.
    const expired = await eventually(() => call(h.baseUrl, '/devices/list', { token }), {
      until: (r) => r.status !== 200,
      timeoutMs: 5000,
      intervalMs: 100,
      message: 'the token to expire',
    });
    expect([expired.status, expired.json.error.code]).toEqual([401, 'UNAUTHORIZED']);
  });

  it('stops accepting a revoked token within the credential cache time', async () => {
    const h = await startApiHarness({ credentialCacheMs: 200 });
    await h.seedEnvironment('demo');
    const { token, id } = await h.admin.createToken('demo', 'short', 0);
    expect((await call(h.baseUrl, '/devices/list', { token })).status).toBe(200);
    await h.admin.revokeToken('demo', id);
    const refused = await eventually(() => call(h.baseUrl, '/devices/list', { token }), {
      until: (r) => r.status !== 200,
      timeoutMs: 5000,
      message: 'the revocation past the token cache',
    });
    expect(refused.status).toBe(401);
  });
});
