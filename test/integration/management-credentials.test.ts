/**
 * The management API's API key and service token operations on the api, gateway and mqtt roles
 * that `startVigil` serves: each operation's success, a validation error by its code, 403 for
 * tokens without scope admin, 404 across environments, the audit entry of each change (never a key
 * or token), a rotated key that works beside its successor until its expiry and is then refused by
 * the gateway, MQTT and login alike, and a token's last use, written at most once a minute.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   response bodies are untyped on purpose: these tests check them at run time. */
import mqtt from 'mqtt';
import { beforeAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../src/tenancy/secrets.ts';
import { eventually } from '../support/eventually.ts';
import { CONNACK_BAD_CREDENTIALS } from '../support/mqtt-codes.ts';
import { call, type ApiHarness } from './api-harness.ts';
import { startManagementHarness } from './management-harness.ts';

/** The credential cache of the roles: a revocation or expiry reaches them within it. */
const CACHE_MS = 100;

describe('management API: API keys and service tokens', () => {
  let h: ApiHarness;
  let api: string;
  let gateway: string;
  let mqttUrl: string;
  let admin: string;
  let operator: string;
  let reader: string;
  let otherAdmin: string;

  beforeAll(async () => {
    const m = await startManagementHarness({ roles: 'api,gateway,mqtt', credentialCacheMs: CACHE_MS });
    ({ h, api } = m);
    ({ admin, operator, reader, otherAdmin } = m.tokens);
    gateway = m.gateway;
    mqttUrl = m.mqtt;
    return () => m.close();
  });

  const post = (path: string, token: string, body: unknown) =>
    call(api, path, { token, body, contentType: 'application/json' });
  const audit = async (env = 'acme') =>
    (await post('/audit/list', env === 'acme' ? admin : otherAdmin, {})).json.data.entries;
  const submit = async (key: string) => {
    const r = await call(gateway, `/gateway/submit/${key}`, {
      body: { deviceName: 'device_1_hallway', Temperature: 21.5 },
      contentType: 'application/json',
    });
    return r.status === 202 ? 'accepted' : `${r.status} ${r.json?.error?.code}`;
  };
  /** What the MQTT broker answers a connection with `key` as its password. */
  const connectMqtt = async (key: string) => {
    try {
      const client = await mqtt.connectAsync(mqttUrl, { reconnectPeriod: 0, username: 'd', password: key });
      await client.endAsync(true);
      return 'connected';
    } catch (err) {
      return `refused ${(err as { code?: number }).code}`;
    }
  };
  const loginWith = async (key: string) =>
    (await call(api, `/login/${key}`, { body: { username: 'nobody', password: 'wrong password' } })).json
      .error.code as string;
  const refused = `401 INVALID_API_KEY`;

  it('creates an API key shown once, which the gateway accepts; the audit keeps no key', async () => {
    const r = await post('/apikeys/create', admin, { name: 'sensors' });
    expect(r.status).toBe(200);
    expect(r.json.data).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{12}$/),
      name: 'sensors',
      createdUTC: expect.stringMatching(/Z$/),
      autoCreate: null,
      key: expect.stringMatching(/^vk_[A-Za-z0-9_-]{43}$/),
    });
    const { key, id } = r.json.data;
    expect(await submit(key)).toBe('accepted');
    const [entry] = await audit();
    expect(entry).toMatchObject({
      actor: 'token:automation',
      action: 'apikey.create',
      target: 'sensors',
      after: { id, name: 'sensors', expiresUTC: null },
    });
    expect(JSON.stringify(entry)).not.toContain(key);

    const listed = await post('/apikeys/list', admin, {});
    expect(listed.json.data).toContainEqual({
      id,
      name: 'sensors',
      createdUTC: r.json.data.createdUTC,
      expiresUTC: null,
      autoCreate: null,
      devicesCreated: 0,
      revision: 1,
    });
    expect(JSON.stringify(listed.json)).not.toContain(key);
    // A name of its own when none is given.
    const unnamed = await post('/apikeys/create', admin, {});
    expect(unnamed.json.data.name).toBe(`key-${unnamed.json.data.id}`);
  });

  it('refuses a taken name (409), a bad name (400 INVALID_INPUT) and an unknown attribute', async () => {
    const dup = await post('/apikeys/create', admin, { name: 'sensors' });
    expect([dup.status, dup.json.error.code]).toEqual([409, 'ALREADY_EXISTS']);
    const bad = await post('/apikeys/create', admin, { name: 'no/slash' });
    expect([bad.status, bad.json.error.code]).toEqual([400, 'INVALID_INPUT']);
    const typo = await post('/apikeys/create', admin, { nmae: 'x' });
    expect([typo.status, typo.json.error.code, typo.json.error.attribute]).toEqual([
      400,
      'INVALID_ATTRIBUTE',
      'nmae',
    ]);
  });

  it('revokes an API key by name or id: the gateway refuses it within the cache time, audited', async () => {
    const { key, id } = (await post('/apikeys/create', admin, { name: 'doomed' })).json.data;
    expect(await submit(key)).toBe('accepted');
    const r = await post('/apikeys/revoke', admin, { id: 'doomed' });
    expect(r.json.data).toEqual({ id, name: 'doomed', revoked: true });
    await eventually(() => submit(key), { until: (s) => s === refused, message: 'the key refused' });
    const again = await post('/apikeys/revoke', admin, { id });
    expect([again.status, again.json.error.code]).toEqual([404, 'CREDENTIAL_NOT_FOUND']);
    const missing = await post('/apikeys/revoke', admin, {});
    expect([missing.status, missing.json.error.code, missing.json.error.attribute]).toEqual([
      400,
      'MISSING_ATTRIBUTE',
      'id',
    ]);
    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'apikey.revoke',
      target: 'doomed',
      before: { id, name: 'doomed', expiresUTC: null },
    });
    expect(entry.after).toBeUndefined();
  });

  it('rotates a key: both work during the overlap, then the old one is refused everywhere', async () => {
    const old = (await post('/apikeys/create', admin, { name: 'fleet' })).json.data;
    const before = Date.now();
    const r = await post('/apikeys/rotate', admin, { id: old.id, overlapMinutes: 60 });
    expect(r.status).toBe(200);
    const rotated = r.json.data;
    expect(rotated).toMatchObject({
      name: 'fleet-r2',
      key: expect.stringMatching(/^vk_/),
      previous: { id: old.id, name: 'fleet' },
    });
    const expiresMs = Date.parse(rotated.previous.expiresUTC);
    expect(expiresMs).toBeGreaterThanOrEqual(before + 3_600_000);
    expect(expiresMs).toBeLessThanOrEqual(Date.now() + 3_600_000);
    expect([await submit(old.key), await submit(rotated.key)]).toEqual(['accepted', 'accepted']);
    expect([await connectMqtt(old.key), await connectMqtt(rotated.key)]).toEqual(['connected', 'connected']);

    // The listing shows the old key's expiry, and Redis drops its record then.
    const listed = (await post('/apikeys/list', admin, {})).json.data;
    expect(listed.find((k: { id: string }) => k.id === old.id)).toMatchObject({
      expiresUTC: rotated.previous.expiresUTC,
    });
    expect(listed.find((k: { id: string }) => k.id === rotated.id)).toMatchObject({ expiresUTC: null });
    const oldRecord = h.keys.apiKey(sha256Hex(old.key));
    expect(Number(await h.redis.hget(oldRecord, 'expiresMs'))).toBe(expiresMs);
    const ttl = await h.redis.pttl(oldRecord);
    expect(ttl).toBeGreaterThan(3_500_000);
    expect(ttl).toBeLessThanOrEqual(3_600_000);

    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'apikey.rotate',
      target: 'fleet',
      before: { id: old.id, expiresUTC: null },
      after: { id: old.id, expiresUTC: rotated.previous.expiresUTC },
      details: { newId: rotated.id, newName: 'fleet-r2', oldExpiresUTC: rotated.previous.expiresUTC },
    });
    expect(JSON.stringify(entry)).not.toContain(old.key);
    expect(JSON.stringify(entry)).not.toContain(rotated.key);

    // The overlap ends: the record's expiry is moved into the past (an hour is not waited out),
    // its record left in place, so that what refuses the key is the expiry, not Redis dropping it.
    await h.redis.hset(oldRecord, 'expiresMs', String(Date.now() - 1));
    await eventually(() => submit(old.key), { until: (s) => s === refused, message: 'the old key refused' });
    expect(await connectMqtt(old.key)).toBe(`refused ${CONNACK_BAD_CREDENTIALS}`);
    expect(await loginWith(old.key)).toBe('INVALID_API_KEY');
    expect(await submit(rotated.key)).toBe('accepted');
    expect(await connectMqtt(rotated.key)).toBe('connected');
    expect(await loginWith(rotated.key)).toBe('INVALID_CREDENTIALS');

    // A rotation of the successor goes on counting.
    const third = await post('/apikeys/rotate', admin, { id: 'fleet-r2', overlapMinutes: 1 });
    expect(third.json.data.name).toBe('fleet-r3');
  });

  it('rotates with an overlap of 0 (the old key revoked at once) and under a name given', async () => {
    const old = (await post('/apikeys/create', admin, { name: 'leaked' })).json.data;
    const r = await post('/apikeys/rotate', admin, { id: 'leaked', overlapMinutes: 0, name: 'fresh' });
    expect(r.json.data).toMatchObject({ name: 'fresh', previous: { id: old.id, name: 'leaked' } });
    await eventually(() => submit(old.key), { until: (s) => s === refused, message: 'the old key refused' });
    expect(await submit(r.json.data.key)).toBe('accepted');
    const names = (await post('/apikeys/list', admin, {})).json.data.map((k: { name: string }) => k.name);
    expect(names).toContain('fresh');
    expect(names).not.toContain('leaked');
    const [entry] = await audit();
    expect(entry).toMatchObject({ action: 'apikey.rotate', target: 'leaked', details: { newName: 'fresh' } });
    expect(entry.after).toBeUndefined();
  });

  it('refuses a rotation without an overlap, over 30 days, to a taken name or of an unknown key', async () => {
    const cases = [
      [{ id: 'fresh' }, 400, 'MISSING_ATTRIBUTE'],
      [{ id: 'fresh', overlapMinutes: 30 * 1440 + 1 }, 400, 'INVALID_ATTRIBUTE'],
      [{ id: 'fresh', overlapMinutes: -1 }, 400, 'INVALID_ATTRIBUTE'],
      [{ id: 'fresh', overlapMinutes: 5, name: 'sensors' }, 409, 'ALREADY_EXISTS'],
      [{ id: 'nope', overlapMinutes: 5 }, 404, 'CREDENTIAL_NOT_FOUND'],
    ] as const;
    for (const [body, status, code] of cases) {
      const r = await post('/apikeys/rotate', admin, body);
      expect([JSON.stringify(body), r.status, r.json.error.code]).toEqual([
        JSON.stringify(body),
        status,
        code,
      ]);
    }
  });

  it('creates service tokens with the scopes asked, shown once and working at once, audited', async () => {
    const expiresUTC = new Date(Date.now() + 86_400_000).toISOString();
    const r = await post('/tokens/create', admin, { name: 'ci', scopes: 'read,write', expiresUTC });
    expect(r.status).toBe(200);
    expect(r.json.data).toEqual({
      id: expect.stringMatching(/^[0-9a-f]{12}$/),
      name: 'ci',
      scopes: ['read', 'write'],
      createdUTC: expect.stringMatching(/Z$/),
      expiresUTC,
      token: expect.stringMatching(/^vt_/),
    });
    const { token } = r.json.data;
    expect((await call(api, '/devices/list', { token })).status).toBe(200);
    const manage = await post('/tokens/list', token, {});
    expect([manage.status, manage.json.error.code]).toEqual([403, 'FORBIDDEN']);
    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'token.create',
      target: 'ci',
      after: { name: 'ci', scopes: ['read', 'write'], expiresUTC },
    });
    expect(JSON.stringify(entry)).not.toContain(token);

    const asList = await post('/tokens/create', admin, { name: 'robot', scopes: ['read', 'write', 'admin'] });
    expect(asList.json.data).toMatchObject({ scopes: ['read', 'write', 'admin'], expiresUTC: null });
    const inSeconds = await post('/tokens/create', admin, {
      name: 'brief',
      scopes: ['read'],
      expiresUTC: Math.floor(Date.now() / 1000) + 3600,
    });
    expect(Date.parse(inSeconds.json.data.expiresUTC)).toBeGreaterThan(Date.now());
  });

  it('refuses scopes that are not read, read,write or read,write,admin, a past expiry and a taken name', async () => {
    const cases = [
      [{ name: 't1', scopes: 'write' }, 400, 'INVALID_ATTRIBUTE'],
      [{ name: 't2', scopes: ['read', 'admin'] }, 400, 'INVALID_ATTRIBUTE'],
      [{ name: 't3', scopes: ['read', 'root'] }, 400, 'INVALID_ATTRIBUTE'],
      [{ name: 't4' }, 400, 'MISSING_ATTRIBUTE'],
      [{ name: 't5', scopes: 'read', expiresUTC: '2001-01-01T00:00:00Z' }, 400, 'INVALID_ATTRIBUTE'],
      [{ name: 't6', scopes: 'read', expiresUTC: 'tomorrow' }, 400, 'INVALID_ATTRIBUTE'],
      [{ name: 'ci', scopes: 'read' }, 409, 'ALREADY_EXISTS'],
    ] as const;
    for (const [body, status, code] of cases) {
      const r = await post('/tokens/create', admin, body);
      expect([JSON.stringify(body), r.status, r.json.error.code]).toEqual([
        JSON.stringify(body),
        status,
        code,
      ]);
    }
  });

  it('lists tokens with their last use, written once a minute at most', async () => {
    const { token, id } = (await post('/tokens/create', admin, { name: 'grafana', scopes: 'read' })).json
      .data;
    const lastUsed = async () =>
      (await post('/tokens/list', admin, {})).json.data.find((t: { id: string }) => t.id === id)
        .lastUsedUTC as string | null;
    expect(await lastUsed()).toBeNull();
    // An API app on the harness's Redis connection with a clock the test moves: its tenancy store
    // writes a use on that connection before it answers, so a read on it after the answer sees
    // whatever the request wrote.
    let nowMs = Date.parse('2030-06-01T12:00:00.000Z');
    const app = await h.startApp({ clock: () => nowMs });
    const use = async () => expect((await call(app, '/devices/list', { token })).status).toBe(200);
    const field = () => h.redis.hget(h.keys.token(sha256Hex(token)), 'lastUsedMs');

    await use();
    expect(await field()).toBe(String(nowMs));
    expect(await lastUsed()).toBe('2030-06-01T12:00:00.000Z');
    // Changed by hand: a use within the minute writes nothing, so the field stays as set.
    await h.redis.hset(h.keys.token(sha256Hex(token)), 'lastUsedMs', '1');
    nowMs += 59_000;
    await use();
    await use();
    expect(await field()).toBe('1');
    // A minute after the last write, the next use is written.
    nowMs += 1_000;
    await use();
    expect(await field()).toBe(String(nowMs));
    expect(await lastUsed()).toBe('2030-06-01T12:01:00.000Z');
  });

  it('revokes a service token: the read API refuses it within the cache time, audited', async () => {
    const { token, id } = (await post('/tokens/create', admin, { name: 'temp', scopes: 'read' })).json.data;
    expect((await call(api, '/devices/list', { token })).status).toBe(200);
    const r = await post('/tokens/revoke', admin, { id: 'temp' });
    expect(r.json.data).toEqual({ id, name: 'temp', revoked: true });
    await eventually(async () => (await call(api, '/devices/list', { token })).status, {
      until: (s) => s === 401,
      message: 'the token refused',
    });
    const again = await post('/tokens/revoke', admin, { id });
    expect([again.status, again.json.error.code]).toEqual([404, 'CREDENTIAL_NOT_FOUND']);
    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'token.revoke',
      target: 'temp',
      before: { id, name: 'temp', scopes: ['read'] },
    });
    expect(
      (await post('/tokens/list', admin, {})).json.data.map((t: { name: string }) => t.name),
    ).not.toContain('temp');
  });

  it('answers 403 FORBIDDEN to tokens without scope admin', async () => {
    const paths = [
      '/apikeys/create',
      '/apikeys/list',
      '/apikeys/revoke',
      '/apikeys/rotate',
      '/tokens/create',
      '/tokens/list',
      '/tokens/revoke',
    ];
    for (const token of [operator, reader]) {
      for (const path of paths) {
        const r = await post(path, token, { id: 'sensors' });
        expect([path, r.status, r.json.error.code]).toEqual([path, 403, 'FORBIDDEN']);
      }
    }
  });

  it("never reaches another environment's keys or tokens (404, as if they did not exist)", async () => {
    const sensors = (await post('/apikeys/list', admin, {})).json.data.find(
      (k: { name: string }) => k.name === 'sensors',
    );
    for (const [path, body] of [
      ['/apikeys/revoke', { id: sensors.id }],
      ['/apikeys/revoke', { id: 'sensors' }],
      ['/apikeys/rotate', { id: sensors.id, overlapMinutes: 0 }],
      ['/tokens/revoke', { id: 'ci' }],
    ] as const) {
      const r = await post(path, otherAdmin, body);
      expect([path, r.status, r.json.error.code]).toEqual([path, 404, 'CREDENTIAL_NOT_FOUND']);
    }
    const theirs = (await post('/apikeys/list', otherAdmin, {})).json.data;
    expect(theirs.map((k: { id: string }) => k.id)).not.toContain(sensors.id);
    const theirTokens = (await post('/tokens/list', otherAdmin, {})).json.data;
    expect(theirTokens.map((t: { name: string }) => t.name)).toEqual(['automation', 'test']);
    expect(await audit('other')).toEqual([]);
  });

  it('describes every operation in the OpenAPI document, POST only', async () => {
    const doc = (await call(api, '/openapi.json')).json;
    for (const path of [
      '/apikeys/create',
      '/apikeys/list',
      '/apikeys/revoke',
      '/apikeys/rotate',
      '/tokens/create',
      '/tokens/list',
      '/tokens/revoke',
    ]) {
      expect(Object.keys(doc.paths[path])).toEqual(['post']);
      expect(doc.paths[path].post.security).toEqual([{ bearer: [] }]);
    }
    const rotate = doc.paths['/apikeys/rotate'].post.requestBody.content['application/json'].schema;
    expect(rotate.properties.overlapMinutes).toMatchObject({ minimum: 0, maximum: 43_200 });
  });
});
