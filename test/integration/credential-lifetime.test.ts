/**
 * Credentials end when they should: a password change, turning MFA on or off, and deleting a user
 * end that user's login tokens (within the credential cache time, 5 s at most with the default) and
 * console sessions (at once, and their live pages within the cache time); a user created again under
 * the same name gets none of the old one's; a role change applies to what was issued without ending
 * it; CLI tokens, which belong to no user, are untouched. Records stored before credential
 * generations existed keep working until their user's next change.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access --
   response bodies are untyped on purpose: these tests check them at run time. */
import { describe, expect, it } from 'vitest';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import { sha256Hex } from '../../src/tenancy/secrets.ts';
import { eventually } from '../support/eventually.ts';
import { call, startApiHarness, type ApiHarness } from './api-harness.ts';
import { consoleClient, fleetStatus, formToken, signIn, type ConsoleClient } from './console-client.ts';

const PASSWORD = 'correct horse battery';
const NEW_PASSWORD = 'another horse battery';
/** What the product promises for a revocation to reach every cache. */
const PROMISED_MS = 5000;

interface Alice {
  h: ApiHarness;
  apiKey: string;
  /** A `vigil token create` token of the environment, bound to no user. */
  cliToken: string;
  /** Alice's login token. */
  token: string;
  /** A console signed in as alice. */
  browser: ConsoleClient;
}

async function aliceSignedIn(overrides: Parameters<typeof startApiHarness>[0] = {}): Promise<Alice> {
  const h = await startApiHarness({ credentialCacheMs: 200, ...overrides });
  const { apiKey, token: cliToken } = await h.seedEnvironment('demo');
  await h.admin.createUser('demo', 'alice', PASSWORD);
  const token = await login(h, apiKey, PASSWORD);
  const browser = consoleClient(h.baseUrl);
  await signIn(browser, 'demo', 'alice', PASSWORD);
  expect((await read(h, token)).status).toBe(200);
  expect(await fleetStatus(browser)).toBe(200);
  return { h, apiKey, cliToken, token, browser };
}

async function login(h: ApiHarness, apiKey: string, password: string): Promise<string> {
  const res = await call(h.baseUrl, `/login/${apiKey}`, { body: { username: 'alice', password } });
  expect(res.status).toBe(200);
  return res.json.data.token as string;
}

const read = (h: ApiHarness, token: string) => call(h.baseUrl, '/devices/list', { token });
const acknowledge = (h: ApiHarness, token: string) =>
  call(h.baseUrl, '/alarms/acknowledge', { token, body: { deviceName: 'device_1_hallway' } });

/** Waits, no longer than promised, for the token to be refused; returns the refusal. */
function refusedInTime(h: ApiHarness, token: string, what: string) {
  return eventually(() => read(h, token), {
    until: (r) => r.status !== 200,
    timeoutMs: PROMISED_MS,
    intervalMs: 50,
    message: `the login token to be refused after ${what}`,
  });
}

/** Status and error code of an answer, for one comparison. */
const outcome = (r: { status: number; json: { error?: { code?: string } } }) => [
  r.status,
  r.json.error?.code,
];

describe('credentials end when they should', () => {
  it('ends console sessions at once and login tokens in time when the password changes, and keeps CLI tokens', async () => {
    // The default credential cache: the promise holds as shipped.
    const { h, apiKey, cliToken, token, browser } = await aliceSignedIn({ credentialCacheMs: 2000 });
    await h.admin.setPassword('demo', 'alice', NEW_PASSWORD);
    expect(outcome(await refusedInTime(h, token, 'a password change'))).toEqual([401, 'UNAUTHORIZED']);
    expect(await fleetStatus(browser)).toBe(303);
    expect((await read(h, cliToken)).status).toBe(200);
    // The new password signs in as before.
    expect((await read(h, await login(h, apiKey, NEW_PASSWORD))).status).toBe(200);
    const again = consoleClient(h.baseUrl);
    await signIn(again, 'demo', 'alice', NEW_PASSWORD);
    expect(await fleetStatus(again)).toBe(200);
  });

  it('gives a user deleted and created again under the same name none of the old one’s tokens or sessions', async () => {
    const { h, apiKey, cliToken, token, browser } = await aliceSignedIn();
    await h.admin.deleteUser('demo', 'alice');
    // The same name and even the same password: still another user.
    await h.admin.createUser('demo', 'alice', PASSWORD);
    expect(outcome(await refusedInTime(h, token, 'deletion and re-creation'))).toEqual([401, 'UNAUTHORIZED']);
    expect(await fleetStatus(browser)).toBe(303);
    expect((await read(h, cliToken)).status).toBe(200);
    expect((await read(h, await login(h, apiKey, PASSWORD))).status).toBe(200);
  });

  it('ends login tokens and sessions when MFA is turned on, and again when it is turned off', async () => {
    const { h, apiKey, token, browser } = await aliceSignedIn();
    await h.admin.enableMfa('demo', 'alice');
    expect(await fleetStatus(browser)).toBe(303);
    expect(outcome(await refusedInTime(h, token, 'MFA turned on'))).toEqual([401, 'UNAUTHORIZED']);

    await h.admin.disableMfa('demo', 'alice');
    const next = await login(h, apiKey, PASSWORD);
    await signIn(browser, 'demo', 'alice', PASSWORD);
    expect(await fleetStatus(browser)).toBe(200);
    await h.admin.enableMfa('demo', 'alice');
    await h.admin.disableMfa('demo', 'alice');
    expect(await fleetStatus(browser)).toBe(303);
    expect(outcome(await refusedInTime(h, next, 'MFA turned off'))).toEqual([401, 'UNAUTHORIZED']);
  });

  it('applies a role change to tokens and sessions already issued, without ending them', async () => {
    const { h, token, browser } = await aliceSignedIn();
    const consoleAcknowledge = async () => {
      const csrf = await formToken(await browser.get('/console/alarms'));
      const res = await browser.post('/console/alarms/acknowledge', {
        _csrf: csrf,
        deviceName: 'device_1_hallway',
      });
      await res.arrayBuffer();
      return res.status;
    };
    // An operator gets past the role check to an alarm that is not there.
    expect(outcome(await acknowledge(h, token))).toEqual([404, 'ALARM_NOT_FOUND']);
    expect(await consoleAcknowledge()).toBe(404);

    await h.admin.setRole('demo', 'alice', 'viewer');
    const forbidden = await eventually(() => acknowledge(h, token), {
      until: (r) => r.status !== 404,
      timeoutMs: PROMISED_MS,
      message: 'the token to follow the role',
    });
    expect(outcome(forbidden)).toEqual([403, 'FORBIDDEN']);
    expect(await consoleAcknowledge()).toBe(403);
    expect((await read(h, token)).status).toBe(200);
    expect(await fleetStatus(browser)).toBe(200);

    await h.admin.setRole('demo', 'alice', 'operator');
    const back = await eventually(() => acknowledge(h, token), {
      until: (r) => r.status !== 403,
      timeoutMs: PROMISED_MS,
      message: 'the token to follow the role back',
    });
    expect(outcome(back)).toEqual([404, 'ALARM_NOT_FOUND']);
    expect(await consoleAcknowledge()).toBe(404);
  });

  it('closes a live console page within the credential cache time when the password changes', async () => {
    const { h, browser } = await aliceSignedIn({ credentialCacheMs: 200 });
    const live = await browser.openLive('view=fleet');
    expect(live.status).toBe(200);
    await eventually(() => live.text().includes('retry:'), { message: 'the live stream to open' });
    await h.admin.setPassword('demo', 'alice', NEW_PASSWORD);
    await eventually(() => live.text().includes('event: signed-out'), {
      timeoutMs: PROMISED_MS,
      message: 'the live page to be told its session ended',
    });
    await live.close();
  });

  it('does not let a login checked against the old password issue a working token after the change', async () => {
    const h = await startApiHarness();
    await h.seedEnvironment('demo');
    await h.admin.createUser('demo', 'alice', PASSWORD);
    const store = createTenancyStore({ redis: h.redis, keys: h.keys });
    const verified = await store.verifyLogin({
      env: 'demo',
      username: 'alice',
      password: PASSWORD,
      clientAddress: '127.0.0.1',
      nowMs: Date.now(),
    });
    expect(verified.ok).toBe(true);
    if (!verified.ok) return;
    // The password changes between the check and the issuing.
    await h.admin.setPassword('demo', 'alice', NEW_PASSWORD);
    const { token } = await store.createLoginToken('demo', 'alice', 600, verified.generation);
    expect(await store.resolveToken(token, Date.now())).toBeNull();
  });
});

describe('credentials stored before generations existed', () => {
  /** Removes the generation from alice's record, her login token and her session: an older version's data. */
  async function storeAsBeforeGenerations(a: Alice): Promise<void> {
    const { h, token } = a;
    const user = JSON.parse((await h.redis.hget(h.keys.users('demo'), 'alice'))!) as Record<string, unknown>;
    delete user.generation;
    await h.redis.hset(h.keys.users('demo'), 'alice', JSON.stringify(user));
    await h.redis.hdel(h.keys.token(sha256Hex(token)), 'generation');
    const [session] = await h.redis.keys(`${h.config.keyPrefix}:env:demo:console-session:*`);
    expect(session).toBeDefined();
    await h.redis.hdel(session!, 'generation');
  }

  it('keeps them working across a role change, and ends them at the next password change', async () => {
    const alice = await aliceSignedIn({ credentialCacheMs: 0 });
    const { h, token, browser } = alice;
    await storeAsBeforeGenerations(alice);
    expect((await read(h, token)).status).toBe(200);
    expect(await fleetStatus(browser)).toBe(200);
    await h.admin.setRole('demo', 'alice', 'viewer');
    expect((await read(h, token)).status).toBe(200);
    expect(await fleetStatus(browser)).toBe(200);
    await h.admin.setPassword('demo', 'alice', NEW_PASSWORD);
    expect(outcome(await read(h, token))).toEqual([401, 'UNAUTHORIZED']);
    expect(await fleetStatus(browser)).toBe(303);
  });
});
