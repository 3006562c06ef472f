/**
 * `POST /login/<API_KEY>` (PRODUCT.md §2): tokens for the key's environment, their expiry, MFA
 * with TOTP codes, the lockout after repeated failures, and revocation through the token cache.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument --
   response bodies are untyped on purpose: these tests check them at run time. */
import { setTimeout as sleep } from 'node:timers/promises';
import { Secret, TOTP } from 'otpauth';
import { describe, expect, it } from 'vitest';
import { call, startApiHarness } from './api-harness.ts';

const PASSWORD = 'correct horse battery';

async function withUser(overrides: Parameters<typeof startApiHarness>[0] = {}) {
  const h = await startApiHarness(overrides);
  const { apiKey } = await h.seedEnvironment('demo');
  await h.admin.createUser('demo', 'alice', PASSWORD);
  const login = (body: unknown, key = apiKey) => call(h.baseUrl, `/login/${key}`, { body });
  return { h, apiKey, login };
}

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
    const { login } = await withUser({ loginMaxFailures: 3, loginLockSeconds: 2 });
    for (let i = 0; i < 3; i++) {
      expect((await login({ username: 'alice', password: 'wrong password' })).status).toBe(401);
    }
    const locked = await login({ username: 'alice', password: PASSWORD });
    expect([locked.status, locked.json.error.code]).toEqual([429, 'LOGIN_LOCKED']);
    expect(Number(locked.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    await sleep(2100);
    expect((await login({ username: 'alice', password: PASSWORD })).status).toBe(200);
  });

  it('stops accepting a login token once it expires, even while it is cached', async () => {
    const { h, login } = await withUser({ loginTokenTtlSeconds: 1, credentialCacheMs: 60_000 });
    const { token } = (await login({ username: 'alice', password: PASSWORD })).json.data;
    expect((await call(h.baseUrl, '/devices/list', { token })).status).toBe(200);
    await sleep(1100);
    const expired = await call(h.baseUrl, '/devices/list', { token });
    expect([expired.status, expired.json.error.code]).toEqual([401, 'UNAUTHORIZED']);
  });

  it('stops accepting a revoked token within the credential cache time', async () => {
    const h = await startApiHarness({ credentialCacheMs: 200 });
    await h.seedEnvironment('demo');
    const { token, id } = await h.admin.createToken('demo', 'short', 0);
    expect((await call(h.baseUrl, '/devices/list', { token })).status).toBe(200);
    await h.admin.revokeToken('demo', id);
    await sleep(250);
    expect((await call(h.baseUrl, '/devices/list', { token })).status).toBe(401);
  });
});
