/**
 * API keys that create the devices they do not know: the auto-create rule set with `/apikeys/create`
 * and set, changed and cleared with `/apikeys/update` (refusals by their codes, a stale revision a
 * CONFLICT, each change audited, the rule and count listed, kept by a rotation's successor), and
 * the worker's creator (tenancy/auto-devices.ts) on the same Redis: a device created of the rule,
 * audited as the key; existing on a repeat, at no cost; refused without a rule, with its definition
 * gone, or with its DevEUI taken; never more than maxDevices, even from two processes at once.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-return, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-explicit-any --
   response bodies are untyped on purpose: these tests check them at run time. */
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { dependentData } from '../../src/keys.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { createAutoDevices, type AutoCreateOutcome } from '../../src/tenancy/auto-devices.ts';
import { call, COMFORT_SENSORS, PARSER, type ApiHarness, type CallResult } from './api-harness.ts';
import { startManagementHarness } from './management-harness.ts';

const RULE = {
  definitionName: 'ComfortSensors',
  labels: { site: 'dock', source: 'ttn' },
  maxDevices: 3,
};

/** A DevEUI per number. */
const eui = (n: number) => `A8404100000000${n.toString(16).padStart(2, '0')}`;

describe('API keys that create unknown devices', () => {
  let h: ApiHarness;
  let api: string;
  let admin: string;
  let audit: () => Promise<any[]>;

  beforeAll(async () => {
    const m = await startManagementHarness();
    ({ h, api } = m);
    audit = () => m.audit();
    admin = m.tokens.admin;
    return () => m.close();
  });

  const post = (path: string, body: unknown) =>
    call(api, path, { token: admin, body, contentType: 'application/json' });
  const code = (r: CallResult) => (r.status === 200 ? 200 : `${r.status} ${r.json.error.code}`);
  const listed = async (id: string) =>
    (await post('/apikeys/list', {})).json.data.find((k: { id: string }) => k.id === id);
  const creator = (redis = h.redis) =>
    createAutoDevices({
      redis,
      keys: h.keys,
      dependents: dependentData(h.keys),
      auditRetentionMs: 86_400_000,
    });
  const kinds = (outcomes: Map<string, AutoCreateOutcome>) =>
    Object.fromEntries([...outcomes].map(([name, o]) => [name, o.kind === 'refused' ? o.code : o.kind]));

  it('creates a key with a rule, listed with its count and audited; refuses a rule that is not one', async () => {
    const r = await post('/apikeys/create', { name: 'ttn', autoCreate: RULE });
    expect(r.json.data.autoCreate).toEqual({ ...RULE, definitionIsPublic: false });
    expect(await listed(r.json.data.id)).toMatchObject({
      name: 'ttn',
      autoCreate: { ...RULE, definitionIsPublic: false },
      devicesCreated: 0,
      revision: 1,
    });
    const [entry] = await audit();
    expect(entry).toMatchObject({ action: 'apikey.create', after: { autoCreate: { maxDevices: 3 } } });

    const refusals = [
      [{ ...RULE, maxDevices: 0 }, '400 INVALID_ATTRIBUTE'],
      [{ ...RULE, maxDevices: 100_001 }, '400 INVALID_ATTRIBUTE'],
      [{ ...RULE, maxDevices: 2.5 }, '400 INVALID_ATTRIBUTE'],
      [{ labels: {}, maxDevices: 1 }, '400 INVALID_ATTRIBUTE'],
      [{ ...RULE, colour: 'red' }, '400 INVALID_ATTRIBUTE'],
      [{ ...RULE, definitionName: 'NoSuch' }, '404 DEFINITION_NOT_FOUND'],
      [{ ...RULE, definitionIsPublic: true }, '404 DEFINITION_NOT_FOUND'],
      [{ ...RULE, labels: { devEui: eui(1) } }, '400 INVALID_INPUT'],
      [{ ...RULE, labels: { '1st': 'x' } }, '400 INVALID_INPUT'],
    ] as const;
    for (const [autoCreate, expected] of refusals)
      expect([autoCreate, code(await post('/apikeys/create', { name: 'refused', autoCreate }))]).toEqual([
        autoCreate,
        expected,
      ]);
    expect((await post('/apikeys/list', {})).json.data.map((k: { name: string }) => k.name)).not.toContain(
      'refused',
    );
  });

  it('sets, changes and clears a rule with /apikeys/update, each audited, a stale revision refused', async () => {
    const { id } = (await post('/apikeys/create', { name: 'chirp' })).json.data;
    const set = await post('/apikeys/update', { id: 'chirp', autoCreate: RULE, revision: 1 });
    expect(set.json.data).toMatchObject({ id, autoCreate: { maxDevices: 3 }, revision: 2 });
    expect((await audit())[0]).toMatchObject({
      action: 'apikey.update',
      target: 'chirp',
      before: { autoCreate: null, revision: 1 },
      after: { autoCreate: { maxDevices: 3 }, revision: 2 },
      details: { autoCreate: 'set' },
    });

    const stale = await post('/apikeys/update', { id, autoCreate: { ...RULE, maxDevices: 9 }, revision: 1 });
    expect([code(stale), stale.json.error.revision]).toEqual(['409 CONFLICT', 2]);
    const changed = await post('/apikeys/update', {
      id,
      autoCreate: { ...RULE, maxDevices: 9 },
      revision: 2,
    });
    expect(changed.json.data).toMatchObject({ autoCreate: { maxDevices: 9 }, revision: 3 });
    expect((await audit())[0]).toMatchObject({ details: { autoCreate: 'changed' } });

    // The same rule again changes nothing and is not recorded.
    const entries = (await audit()).length;
    const same = await post('/apikeys/update', { id, autoCreate: { ...RULE, maxDevices: 9 } });
    expect(same.json.data.revision).toBe(3);
    expect((await audit()).length).toBe(entries);

    const cleared = await post('/apikeys/update', { id, autoCreate: null });
    expect(cleared.json.data).toMatchObject({ autoCreate: null, revision: 4 });
    expect((await audit())[0]).toMatchObject({ action: 'apikey.update', details: { autoCreate: 'cleared' } });

    expect(code(await post('/apikeys/update', { id }))).toBe('400 MISSING_ATTRIBUTE');
    expect(code(await post('/apikeys/update', { id: 'nobody', autoCreate: null }))).toBe(
      '404 CREDENTIAL_NOT_FOUND',
    );
    expect(code(await post('/apikeys/update', { id, autoCreate: { ...RULE, definitionName: 'Gone' } }))).toBe(
      '404 DEFINITION_NOT_FOUND',
    );
  });

  it('creates a device of the rule, audited as the key, and finds it existing the second time', async () => {
    const key = (await post('/apikeys/create', { name: 'lns', autoCreate: RULE })).json.data;
    const epoch = await h.redis.hget(h.keys.catalogEpochs(), 'acme');
    const wanted = [{ deviceName: 'eui-a840410000000001', devEui: eui(1) }];
    const first = await creator().create('acme', key.id, wanted);
    const created = first.get('eui-a840410000000001');
    expect(created).toMatchObject({
      kind: 'created',
      device: {
        deviceName: 'eui-a840410000000001',
        definitionName: 'ComfortSensors',
        definitionIsPublic: false,
        labels: { site: 'dock', source: 'ttn', devEui: eui(1).toLowerCase() },
        revision: 1,
      },
    });
    const got = await post('/devices/get', { deviceName: 'eui-a840410000000001' });
    expect(got.json.data.labels).toEqual({ site: 'dock', source: 'ttn', devEui: eui(1).toLowerCase() });
    expect(await h.redis.hget(h.keys.devEuis('acme'), eui(1).toLowerCase())).toBe('eui-a840410000000001');
    expect(await h.redis.zscore(h.keys.unheardDevices('acme'), 'eui-a840410000000001')).not.toBeNull();
    expect(await h.redis.hget(h.keys.catalogEpochs(), 'acme')).not.toBe(epoch);
    expect((await audit())[0]).toMatchObject({
      actor: 'apiKey:lns',
      action: 'device.create',
      target: 'eui-a840410000000001',
      after: { deviceName: 'eui-a840410000000001', revision: 1 },
      details: { autoCreated: true, apiKeyId: key.id },
    });
    expect((await listed(key.id)).devicesCreated).toBe(1);

    const entries = (await audit()).length;
    const again = await creator().create('acme', key.id, wanted);
    expect(kinds(again)).toEqual({ 'eui-a840410000000001': 'existing' });
    expect(again.get('eui-a840410000000001')).toMatchObject({
      device: created?.kind === 'created' ? created.device : {},
    });
    expect((await listed(key.id)).devicesCreated).toBe(1);
    expect((await audit()).length).toBe(entries);
  });

  it('refuses without a rule, with the rule’s definition gone, with the DevEUI taken and bad input', async () => {
    const plain = (await post('/apikeys/create', { name: 'plain' })).json.data;
    const w = { deviceName: 'refused-1', devEui: eui(20) };
    expect(kinds(await creator().create('acme', plain.id, [w]))).toEqual({ 'refused-1': 'UNKNOWN_DEVICE' });
    expect(kinds(await creator().create('acme', 'no-such-key', [w]))).toEqual({
      'refused-1': 'UNKNOWN_DEVICE',
    });

    await h.admin.applyDefinition(
      { kind: 'private', env: 'acme' },
      { ...COMFORT_SENSORS, name: 'Doomed' },
      PARSER,
    );
    const doomed = (
      await post('/apikeys/create', { name: 'doomed', autoCreate: { ...RULE, definitionName: 'Doomed' } })
    ).json.data;
    await h.admin.deleteDefinition({ kind: 'private', env: 'acme' }, 'Doomed');
    expect(kinds(await creator().create('acme', doomed.id, [w]))).toEqual({
      'refused-1': 'DEFINITION_NOT_FOUND',
    });

    const key = (await post('/apikeys/create', { name: 'taker', autoCreate: RULE })).json.data;
    expect(
      (
        await post('/devices/create', {
          deviceName: 'holder',
          definitionName: 'ComfortSensors',
          definitionIsPublic: false,
          labels: { devEui: eui(20) },
        })
      ).status,
    ).toBe(200);
    const outcomes = await creator().create('acme', key.id, [
      w,
      { deviceName: 'bad/name', devEui: eui(21) },
      { deviceName: 'bad-eui', devEui: 'xyz' },
    ]);
    expect(kinds(outcomes)).toEqual({
      'refused-1': 'DEV_EUI_TAKEN',
      'bad/name': 'INVALID_INPUT',
      'bad-eui': 'INVALID_INPUT',
    });
    expect(await h.redis.zscore(h.keys.devices('acme'), 'refused-1')).toBeNull();
    expect((await listed(key.id)).devicesCreated).toBe(0);
  });

  it('creates no more than maxDevices from two processes at once, and the rotated key goes on counting', async () => {
    const key = (await post('/apikeys/create', { name: 'capped', autoCreate: { ...RULE, maxDevices: 7 } }))
      .json.data;
    const other = connectRedis(h.config.redisUrl, 'command', 'other-worker');
    onTestFinished(() => closeRedis(other));
    const batch = (from: number) =>
      Array.from({ length: 6 }, (_, i) => ({
        deviceName: `capped-${from + i}`,
        devEui: eui(100 + from + i),
      }));
    const [a, b] = await Promise.all([
      creator().create('acme', key.id, batch(0)),
      creator(other).create('acme', key.id, batch(6)),
    ]);
    const all = [...a.values(), ...b.values()];
    expect(all.filter((o) => o.kind === 'created')).toHaveLength(7);
    expect(all.filter((o) => o.kind === 'refused' && o.code === 'AUTO_CREATE_LIMIT')).toHaveLength(5);
    expect((await listed(key.id)).devicesCreated).toBe(7);
    const names = await h.redis.zrangebylex(h.keys.devices('acme'), '[capped-', '[capped-~');
    expect(names).toHaveLength(7);

    const rotated = (await post('/apikeys/rotate', { id: key.id, overlapMinutes: 60 })).json.data;
    expect(await listed(rotated.id)).toMatchObject({ autoCreate: { maxDevices: 7 }, devicesCreated: 7 });
    expect(
      kinds(await creator().create('acme', rotated.id, [{ deviceName: 'capped-x', devEui: eui(250) }])),
    ).toEqual({
      'capped-x': 'AUTO_CREATE_LIMIT',
    });
    await post('/apikeys/update', { id: rotated.id, autoCreate: { ...RULE, maxDevices: 8 } });
    expect(
      kinds(await creator().create('acme', rotated.id, [{ deviceName: 'capped-x', devEui: eui(250) }])),
    ).toEqual({
      'capped-x': 'created',
    });
    // Both keys count under one counter while they overlap.
    expect((await listed(key.id)).devicesCreated).toBe(8);
  });
});
