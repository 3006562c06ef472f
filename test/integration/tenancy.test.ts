import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { sha256Hex, totpCode } from '../../src/tenancy/secrets.ts';
import { createTenancyAdmin, type TenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import { createTenancyStore, type TenancyStore } from '../../src/tenancy/tenancy-store.ts';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { testConfig } from '../support/context.ts';

const config = testConfig();
const keys = createKeys(config.keyPrefix);
let redis: Redis;
let store: TenancyStore;
let admin: TenancyAdmin;

const spec = (name: string): DefinitionSpec => ({
  name,
  manufacturer: 'Acme',
  version: '1',
  dataPoints: [
    {
      name: 'Temperature',
      displayName: 'Temperature',
      dataType: 'temperature',
      hysteresis: 0,
      thresholds: [],
    },
    { name: 'CO2', displayName: 'CO2', dataType: 'co2', hysteresis: 0, thresholds: [] },
  ],
});
const PARSER = 'function parsePayload(s) { return JSON.parse(s); }';

/** A login attempt from one client address. */
const attempt = (
  env: string,
  username: string,
  password: string,
  totp: string | undefined,
  nowMs: number,
) => ({
  env,
  username,
  password,
  totp,
  clientAddress: '192.0.2.1',
  nowMs,
});

beforeAll(async () => {
  redis = new Redis(config.redisUrl);
  store = createTenancyStore({
    redis,
    keys,
    login: { maxFailures: 3, maxFailuresPerUser: 50, maxFailuresPerAddress: 100, lockSeconds: 60 },
  });
  admin = createTenancyAdmin(adminDeps(redis, keys));
  await admin.createEnvironment('east', 'en');
  await admin.createEnvironment('west', 'nl');
  await admin.applyDefinition({ kind: 'private', env: 'east' }, spec('Room'), PARSER);
  await admin.applyDefinition({ kind: 'public' }, spec('Shared'), PARSER);
});
afterAll(async () => {
  const all = await redis.keys(`${config.keyPrefix}:*`);
  if (all.length > 0) await redis.del(...all);
  redis.disconnect();
});

describe('tenancy store: environments, definitions and devices', () => {
  it('reads environments and lists definitions: own private ones, then public ones', async () => {
    expect(await store.getEnvironment('west')).toMatchObject({ name: 'west', locale: 'nl' });
    expect(await store.getEnvironment('north')).toBeNull();
    expect((await store.listEnvironments()).map((e) => e.name)).toEqual(['east', 'west']);
    expect((await store.listDefinitions('east')).map((d) => [d.spec.name, d.isPublic, d.env])).toEqual([
      ['Room', false, 'east'],
      ['Shared', true, undefined],
    ]);
    expect((await store.listDefinitions('west')).map((d) => d.spec.name)).toEqual(['Shared']);
    expect(await store.getDefinition('west', 'Room', false)).toBeNull();
    expect(await store.getDefinition('east', 'Room', false)).toMatchObject({
      revision: 1,
      parserSource: PARSER,
    });
  });

  it('lists devices by name and fetches batches in request order with null for unknown names', async () => {
    for (const name of ['zeta', 'alpha', 'mid']) {
      await admin.createDevice('east', { name, definitionName: 'Room', definitionIsPublic: false });
    }
    await admin.createDevice('west', {
      name: 'w1',
      definitionName: 'Shared',
      definitionIsPublic: true,
      availabilityMinutes: 5,
    });
    expect((await store.listDevices('east')).map((d) => d.deviceName)).toEqual(['alpha', 'mid', 'zeta']);
    const batch = await store.getDevices('east', ['zeta', 'w1', 'alpha']);
    expect(batch.map((d) => d?.deviceName ?? null)).toEqual(['zeta', null, 'alpha']);
    expect(await store.getDevice('west', 'w1')).toMatchObject({
      env: 'west',
      definitionName: 'Shared',
      definitionIsPublic: true,
      availabilityMinutes: 5,
    });
    expect(await store.getDevice('west', 'zeta')).toBeNull();
  });

  it('reads threshold overrides and suppressions of a device', async () => {
    await admin.setThreshold('east', 'alpha', 'CO2', [{ status: 'WARNING', above: 900 }]);
    await admin.suppress('east', 'alpha', 'Temperature', 0);
    expect(await store.getThresholdOverrides('east', 'alpha')).toEqual(
      new Map([['CO2', { rules: [{ status: 'WARNING', above: 900 }], hysteresis: 0 }]]),
    );
    expect(await store.getSuppressed('east', 'alpha')).toEqual(new Map([['Temperature', 0]]));
    expect(await store.getThresholdOverrides('east', 'mid')).toEqual(new Map());
  });

  it('reads the pre-parser and bumps its revision only when the source changes', async () => {
    expect(await store.getPreparser('east')).toBeNull();
    await admin.setPreparser('east', PARSER);
    await admin.setPreparserEnabled('east', true);
    expect(await store.getPreparser('east')).toEqual({ source: PARSER, enabled: true, revision: 1 });
    expect((await admin.setPreparser('east', PARSER)).changed).toBe(false);
    expect((await admin.setPreparser('east', `${PARSER}\n`)).revision).toBe(2);
  });
});

describe('tenancy admin: changing a device definition', () => {
  it('drops overrides and suppressions of data points the new definition does not have', async () => {
    const tempOnly: DefinitionSpec = { ...spec('TempOnly'), dataPoints: spec('x').dataPoints.slice(0, 1) };
    await admin.applyDefinition({ kind: 'private', env: 'east' }, tempOnly, PARSER);
    await admin.createDevice('east', { name: 'mover', definitionName: 'Room', definitionIsPublic: false });
    await admin.setThreshold('east', 'mover', 'CO2', [{ status: 'WARNING', above: 900 }]);
    await admin.setThreshold('east', 'mover', 'Temperature', [{ status: 'WARNING', above: 30 }]);
    await admin.suppress('east', 'mover', 'CO2', 0);
    await admin.updateDevice('east', 'mover', { definitionName: 'TempOnly' });
    expect([...(await store.getThresholdOverrides('east', 'mover')).keys()]).toEqual(['Temperature']);
    expect(await store.getSuppressed('east', 'mover')).toEqual(new Map());
    expect(await store.getDevice('east', 'mover')).toMatchObject({ definitionName: 'TempOnly' });
  });
});

describe('tenancy store: credentials', () => {
  it('resolves API keys until they are revoked', async () => {
    const { key, id } = await admin.createApiKey('east', 'gw');
    expect(await store.resolveApiKey(key)).toMatchObject({ env: 'east', id, name: 'gw' });
    expect(await store.resolveApiKey(`${key}x`)).toBeNull();
    await admin.revokeApiKey('east', 'gw');
    expect(await store.resolveApiKey(key)).toBeNull();
  });

  it('refuses to register one secret twice, and prunes expired tokens from the list', async () => {
    const key = 'vk_the_same_secret_in_two_places_0123';
    expect(await admin.putApiKey('east', 'first', key)).toBe(true);
    expect(await admin.putApiKey('east', 'first', key)).toBe(false);
    await expect(admin.putApiKey('west', 'second', key)).rejects.toMatchObject({ code: 'ALREADY_EXISTS' });
    expect(await store.resolveApiKey(key)).toMatchObject({ env: 'east', name: 'first' });
    await admin.createToken('west', 'brief', Date.now() + 60_000);
    const anHourLater = createTenancyAdmin({ ...adminDeps(redis, keys), clock: () => Date.now() + 3600_000 });
    expect((await anHourLater.listTokens('west')).map((t) => t.name)).not.toContain('brief');
    expect(await redis.hlen(keys.envTokens('west'))).toBe(0);
  });

  it('resolves tokens until they expire or are revoked', async () => {
    const now = Date.now();
    const { token } = await admin.createToken('east', 'short', now + 60_000);
    expect(await store.resolveToken(token, now)).toMatchObject({
      env: 'east',
      kind: 'cli',
      subject: 'short',
    });
    expect(await store.resolveToken(token, now + 60_000)).toBeNull();
    await admin.revokeToken('east', 'short');
    expect(await store.resolveToken(token, now)).toBeNull();
  });

  it('issues login tokens that expire and die with their user', async () => {
    await admin.createUser('east', 'carol', 'long enough');
    const verified = await store.verifyLogin(attempt('east', 'carol', 'long enough', undefined, Date.now()));
    if (!verified.ok) throw new Error(`carol's login was refused: ${verified.code}`);
    const { token, expiresUTC } = await store.createLoginToken('east', 'carol', 3600, verified.generation);
    const record = await store.resolveToken(token, Date.now());
    expect(record).toMatchObject({ kind: 'login', subject: 'carol', expiresMs: Date.parse(expiresUTC) });
    expect(await redis.pttl(keys.token(sha256Hex(token)))).toBeGreaterThan(3_500_000);
    await admin.deleteUser('east', 'carol');
    expect(await store.resolveToken(token, Date.now())).toBeNull();
  });
});

describe('tenancy store: login', () => {
  it('checks password and TOTP, asking for the code when MFA is on and refusing a reused code', async () => {
    await admin.createUser('west', 'dave', 'dave-password');
    const now = Date.now();
    expect(await store.verifyLogin(attempt('west', 'dave', 'dave-password', undefined, now))).toMatchObject({
      ok: true,
    });
    expect(await store.verifyLogin(attempt('west', 'nobody', 'dave-password', undefined, now))).toMatchObject(
      {
        ok: false,
        code: 'INVALID_CREDENTIALS',
      },
    );
    const { secret } = await admin.enableMfa('west', 'dave');
    expect(await store.verifyLogin(attempt('west', 'dave', 'dave-password', undefined, now))).toMatchObject({
      code: 'MFA_REQUIRED',
    });
    expect(
      await store.verifyLogin(attempt('west', 'dave', 'dave-password', totpCode(secret, now - 30_000), now)),
    ).toMatchObject({ ok: true });
    // The same code again is a replay (RFC 6238 §5.2).
    expect(
      await store.verifyLogin(attempt('west', 'dave', 'dave-password', totpCode(secret, now - 30_000), now)),
    ).toMatchObject({ code: 'INVALID_CREDENTIALS' });
    expect(
      await store.verifyLogin(attempt('west', 'dave', 'dave-password', totpCode(secret, now - 90_000), now)),
    ).toMatchObject({
      code: 'INVALID_CREDENTIALS',
    });
    await admin.disableMfa('west', 'dave');
    expect(await store.verifyLogin(attempt('west', 'dave', 'dave-password', undefined, now))).toMatchObject({
      ok: true,
    });
  });

  it('locks a username after maxFailures failures, with Retry-After, even for the right password', async () => {
    await admin.createUser('west', 'erin', 'erin-password');
    const now = Date.now();
    for (let i = 0; i < 3; i++) {
      expect(await store.verifyLogin(attempt('west', 'erin', 'wrong', undefined, now))).toMatchObject({
        code: 'INVALID_CREDENTIALS',
      });
    }
    const locked = await store.verifyLogin(attempt('west', 'erin', 'erin-password', undefined, now));
    expect(locked).toMatchObject({ ok: false, code: 'LOGIN_LOCKED' });
    expect(locked.ok === false && locked.retryAfterSeconds).toBeGreaterThan(50);
    expect(await store.verifyLogin(attempt('east', 'erin', 'wrong', undefined, now))).toMatchObject({
      code: 'INVALID_CREDENTIALS',
    });
    // A name that cannot be a user creates no failure counter.
    expect(await store.verifyLogin(attempt('west', 'x'.repeat(500), 'wrong', undefined, now))).toMatchObject({
      code: 'INVALID_CREDENTIALS',
    });
    expect(await redis.keys(`${config.keyPrefix}:*${'x'.repeat(500)}*`)).toEqual([]);
    // The lock is on erin from that address.
    await redis.del(keys.loginFailures('west', 'erin', '192.0.2.1'));
    expect(await store.verifyLogin(attempt('west', 'erin', 'erin-password', undefined, now))).toMatchObject({
      ok: true,
    });
  });
});

describe('tenancy admin: deleting an environment', () => {
  it('refuses while devices exist, and with force removes everything of the environment only', async () => {
    const before = await redis.keys(`${config.keyPrefix}:*`);
    await admin.createEnvironment('temp', 'en');
    await admin.applyDefinition({ kind: 'private', env: 'temp' }, spec('Room'), PARSER);
    await admin.createDevice('temp', { name: 'dev', definitionName: 'Room', definitionIsPublic: false });
    await admin.setThreshold('temp', 'dev', 'CO2', [{ status: 'WARNING', above: 1 }]);
    const { key } = await admin.createApiKey('temp');
    const { token } = await admin.createToken('temp', 'grafana', 0);
    await admin.createUser('temp', 'frank', 'frank-password');
    const verified = await store.verifyLogin(
      attempt('temp', 'frank', 'frank-password', undefined, Date.now()),
    );
    if (!verified.ok) throw new Error(`frank's login was refused: ${verified.code}`);
    const login = await store.createLoginToken('temp', 'frank', 600, verified.generation);
    await store.verifyLogin(attempt('temp', 'frank', 'wrong', undefined, Date.now()));
    await redis.hset(keys.deviceState('temp', 'dev'), 'CO2|v', '1');
    await redis.zadd(keys.availabilityDeadlines(), 1, 'temp\ndev');

    await expect(admin.deleteEnvironment('temp', false)).rejects.toMatchObject({ code: 'IN_USE' });
    await admin.deleteEnvironment('temp', true);

    const remaining = (await redis.keys(`${config.keyPrefix}:*`)).sort();
    // Only the login token's own record outlives it (until it expires), and it no longer resolves.
    expect(remaining.filter((k) => !before.includes(k))).toEqual([keys.token(sha256Hex(login.token))]);
    expect(await store.resolveToken(login.token, Date.now())).toBeNull();
    expect(await store.resolveApiKey(key)).toBeNull();
    expect(await store.resolveToken(token, Date.now())).toBeNull();
    expect(await store.getEnvironment('temp')).toBeNull();
    expect(await redis.zscore(keys.availabilityDeadlines(), 'temp\ndev')).toBeNull();
    expect(await store.getDefinition('east', 'Room', false)).not.toBeNull();
  });
});
