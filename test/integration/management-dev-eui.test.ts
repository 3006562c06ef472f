/**
 * A device's `devEui` label as the identity of a LoRaWAN device, on every write path of the
 * management API that `startVigil` serves: 16 hex digits in either case, stored lowercase, anything
 * else INVALID_INPUT; one device per DevEUI (DEV_EUI_TAKEN) on create, update and import — within
 * one import too, in provisioning files, and for two creates at once, exactly one of which wins —;
 * changing, removing or
 * deleting frees it. The worker's catalog finds devices by DevEUI after the refresh that shows a
 * change, the read API's label filter in either case, and layout 7 gives the devices stored before their claims.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call --
   response bodies are untyped on purpose: these tests check them at run time. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { claimDevEuis } from '../../src/state/dev-eui-migration.ts';
import { createCatalog } from '../../src/tenancy/catalog.ts';
import { applyProvisioning } from '../../src/tenancy/provisioning-apply.ts';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import { call, type ApiHarness, type CallResult } from './api-harness.ts';
import { startManagementHarness } from './management-harness.ts';

const EUI = '70B3D57ED0001234';
const eui = EUI.toLowerCase();

describe('management API: DevEUIs', () => {
  let h: ApiHarness;
  let api: string;
  let admin: string;

  beforeAll(async () => {
    const m = await startManagementHarness();
    ({ h, api } = m);
    admin = m.tokens.admin;
    return () => m.close();
  });

  const post = (path: string, body: unknown) =>
    call(api, path, { token: admin, body, contentType: 'application/json' });
  const create = (deviceName: string, labels: Record<string, string>) =>
    post('/devices/create', {
      deviceName,
      definitionName: 'ComfortSensors',
      definitionIsPublic: false,
      labels,
    });
  const outcome = (r: CallResult) => (r.status === 200 ? 200 : `${r.status} ${r.json.error.code}`);
  const holder = (e: string) => h.redis.hget(h.keys.devEuis('acme'), e);
  const importCsv = (csv: string) =>
    call(api, '/devices/import', { token: admin, body: csv, contentType: 'text/csv' });

  it('stores a DevEUI lowercase, refuses one that is not 16 hex digits, and a second device with it', async () => {
    const r = await create('lora-1', { devEui: EUI, site: 'dock' });
    expect(r.status).toBe(200);
    expect(r.json.data.labels).toEqual({ devEui: eui, site: 'dock' });
    expect(await holder(eui)).toBe('lora-1');

    for (const bad of ['70B3D57ED000123', '70B3D57ED00012345', '70B3D57ED000123G', ' 70b3d57ed0001234'])
      expect(outcome(await create('lora-bad', { devEui: bad }))).toBe('400 INVALID_INPUT');
    const refused = await create('lora-bad', { devEui: 'xyz' });
    expect(refused.json.error.label).toBe('devEui');

    const taken = await create('lora-2', { devEui: eui });
    expect(outcome(taken)).toBe('409 DEV_EUI_TAKEN');
    expect(taken.json.error).toMatchObject({ devEui: eui, deviceName: 'lora-1' });
    expect(outcome(await create('lora-2', { devEui: EUI }))).toBe('409 DEV_EUI_TAKEN');
    // Refused before anything was written: no name listed without a record.
    expect(await h.redis.zscore(h.keys.devices('acme'), 'lora-2')).toBeNull();
  });

  it('frees a DevEUI that an update changes or removes, or whose device is deleted', async () => {
    expect((await create('lora-3', { devEui: 'A0A0A0A0A0A0A0A0' })).status).toBe(200);
    const taking = await post('/devices/update', { deviceName: 'lora-3', labels: { devEui: eui } });
    expect(outcome(taking)).toBe('409 DEV_EUI_TAKEN');

    const moved = await post('/devices/update', {
      deviceName: 'lora-1',
      labels: { devEui: 'B0B0B0B0B0B0B0B0' },
    });
    expect(moved.json.data.labels).toEqual({ devEui: 'b0b0b0b0b0b0b0b0' });
    expect(await holder(eui)).toBeNull();
    expect(outcome(await post('/devices/update', { deviceName: 'lora-3', labels: { devEui: EUI } }))).toBe(
      200,
    );
    expect(await holder(eui)).toBe('lora-3');
    expect(await holder('a0a0a0a0a0a0a0a0')).toBeNull();

    expect(outcome(await post('/devices/update', { deviceName: 'lora-1', labels: { site: 'dock' } }))).toBe(
      200,
    );
    expect(await holder('b0b0b0b0b0b0b0b0')).toBeNull();
    expect(outcome(await create('lora-4', { devEui: 'b0b0b0b0b0b0b0b0' }))).toBe(200);

    expect(outcome(await post('/devices/delete', { deviceName: 'lora-4' }))).toBe(200);
    expect(await holder('b0b0b0b0b0b0b0b0')).toBeNull();
    expect(outcome(await create('lora-5', { devEui: 'B0B0B0B0B0B0B0B0' }))).toBe(200);
  });

  it('lets exactly one of many creates at once have one DevEUI, and lists only that one', async () => {
    const [devicesBefore, unheardBefore] = await Promise.all([
      h.redis.zcard(h.keys.devices('acme')),
      h.redis.zcard(h.keys.unheardDevices('acme')),
    ]);
    const names = Array.from({ length: 8 }, (_, i) => `racer-${i}`);
    const answers = await Promise.all(names.map((n) => create(n, { devEui: 'C0C0C0C0C0C0C0C0' })));
    const outcomes = answers.map(outcome);
    expect(outcomes.filter((o) => o === 200)).toHaveLength(1);
    expect(outcomes.filter((o) => o === '409 DEV_EUI_TAKEN')).toHaveLength(names.length - 1);
    const winner = names[outcomes.indexOf(200)];
    expect(await holder('c0c0c0c0c0c0c0c0')).toBe(winner);
    expect(await h.redis.zcard(h.keys.devices('acme'))).toBe(devicesBefore + 1);
    expect(await h.redis.zcard(h.keys.unheardDevices('acme'))).toBe(unheardBefore + 1);
  });

  it('refuses an import whose rows share a DevEUI or take another device’s, and normalises the rest', async () => {
    const header = 'deviceName,definitionName,labels';
    const rejected = await importCsv(
      [
        header,
        'imp-1,ComfortSensors,devEui=D0D0D0D0D0D0D0D0',
        'imp-2,ComfortSensors,devEui=d0d0d0d0d0d0d0d0',
        `imp-3,ComfortSensors,devEui=${eui}`,
        'imp-4,ComfortSensors,devEui=nothex',
        'imp-5,ComfortSensors,devEui=E0E0E0E0E0E0E0E0;site=dock',
      ].join('\n'),
    );
    expect(outcome(rejected)).toBe('400 IMPORT_REJECTED');
    expect(
      rejected.json.error.failed.map((f: { line: number; field: string; code: string }) => [
        f.line,
        f.field,
        f.code,
      ]),
    ).toEqual([
      [3, 'labels', 'DEV_EUI_TAKEN'],
      [4, 'labels', 'DEV_EUI_TAKEN'],
      [5, 'labels', 'INVALID_INPUT'],
    ]);
    expect(await holder('d0d0d0d0d0d0d0d0')).toBeNull();

    const csv = [
      header,
      'imp-1,ComfortSensors,devEui=D0D0D0D0D0D0D0D0',
      'imp-5,ComfortSensors,devEui=E0E0E0E0E0E0E0E0;site=dock',
    ].join('\n');
    expect((await importCsv(csv)).json.data).toMatchObject({ created: 2, failedCount: 0 });
    expect(await holder('d0d0d0d0d0d0d0d0')).toBe('imp-1');
    expect(await holder('e0e0e0e0e0e0e0e0')).toBe('imp-5');
    // The same file again changes nothing: its uppercase DevEUIs are what is stored.
    expect((await importCsv(csv)).json.data).toMatchObject({ created: 0, updated: 0, unchanged: 2 });
    // A row moving imp-1's DevEUI away frees it.
    await importCsv([header, 'imp-1,ComfortSensors,site=dock'].join('\n'));
    expect(await holder('d0d0d0d0d0d0d0d0')).toBeNull();
  });

  it('finds devices by DevEUI in the worker’s catalog after the refresh that shows a change', async () => {
    const catalog = createCatalog({
      tenancy: createTenancyStore({ redis: h.redis, keys: h.keys }),
      ttlMs: 60_000,
    });
    await catalog.refresh(['acme']);
    const found = await catalog.devicesByDevEui('acme', [EUI, 'F0F0F0F0F0F0F0F0', 'not-a-eui']);
    expect([...found.keys()]).toEqual([eui]);
    expect(found.get(eui)?.deviceName).toBe('lora-3');
    expect((await catalog.devicesByDevEui('acme', ['f0f0f0f0f0f0f0f0'])).size).toBe(0);

    await post('/devices/update', { deviceName: 'lora-3', labels: { devEui: 'F0F0F0F0F0F0F0F0' } });
    expect(await create('lora-6', { devEui: EUI })).toMatchObject({ status: 200 });
    await catalog.refresh(['acme']);
    const after = await catalog.devicesByDevEui('acme', [eui, 'f0f0f0f0f0f0f0f0']);
    expect(Object.fromEntries([...after].map(([k, d]) => [k, d.deviceName]))).toEqual({
      [eui]: 'lora-6',
      f0f0f0f0f0f0f0f0: 'lora-3',
    });
    // The read API's label filter finds it in either case too.
    const listed = await post('/devices/list', { labels: `devEui=${EUI}` });
    expect(listed.json.data.map((d: { deviceName: string }) => d.deviceName)).toEqual(['lora-6']);
  });

  it('refuses provisioning files whose devices share a DevEUI or take another device’s, before writing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'vigil-dev-eui-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const apply = (devices: [string, string][]) => {
      writeFileSync(
        join(dir, 'environments.yaml'),
        [
          'environments:',
          '  - name: acme',
          '    devices:',
          ...devices.map(
            ([name, devEui]) =>
              `      - { name: ${name}, definition: ComfortSensors, labels: { devEui: "${devEui}" } }`,
          ),
        ].join('\n'),
      );
      const store = createTenancyStore({ redis: h.redis, keys: h.keys });
      const unused = () => Promise.reject(new Error('no files to load'));
      return applyProvisioning(
        dir,
        { admin: h.admin, store, loadDefinition: unused, loadPreparser: unused },
        {},
      );
    };
    await expect(
      apply([
        ['prov-1', '9999999999999999'],
        ['prov-2', '9999999999999999'],
      ]),
    ).rejects.toMatchObject({
      code: 'DEV_EUI_TAKEN',
    });
    await expect(apply([['prov-1', EUI]])).rejects.toMatchObject({ code: 'DEV_EUI_TAKEN' });
    await expect(apply([['prov-1', 'nothex']])).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    expect(await h.redis.zscore(h.keys.devices('acme'), 'prov-1')).toBeNull();
    expect(await apply([['prov-1', '9999999999999ABC']])).toEqual(['acme: device prov-1']);
    expect(await holder('9999999999999abc')).toBe('prov-1');
    expect(await apply([['prov-1', '9999999999999ABC']])).toEqual([]);
  });

  it('claims at layout 7 the DevEUIs of devices stored before, lowercase, the first of two', async () => {
    const env = 'other';
    const write = async (name: string, devEui: string) => {
      await h.redis.hset(h.keys.device(env, name), {
        displayName: name,
        definitionName: 'ComfortSensors',
        definitionIsPublic: '0',
        createdUTC: '2026-01-01T00:00:00.000Z',
        labels: JSON.stringify({ devEui, site: 'old' }),
        revision: '3',
      });
      await h.redis.zadd(h.keys.devices(env), 0, name);
      await h.redis.zadd(h.keys.labelIndex(env, 'devEui'), 0, `${devEui}\n${name}`);
    };
    await write('old-a', '1122334455AABBCC');
    await write('old-b', '1122334455aabbcc');
    await write('old-c', 'not a DevEUI');
    const ctx = {
      redis: h.redis,
      keys: h.keys,
      log: createLogger('silent'),
      signal: new AbortController().signal,
    };
    await claimDevEuis.run(ctx);
    // Again, as after a stop half-way: the same outcome.
    await claimDevEuis.run(ctx);

    const store = createTenancyStore({ redis: h.redis, keys: h.keys });
    const [a, b, c] = await store.getDevices(env, ['old-a', 'old-b', 'old-c']);
    expect(await store.devEuiOwners(env, ['1122334455aabbcc'])).toEqual(['old-a']);
    expect([a?.labels, a?.revision]).toEqual([{ devEui: '1122334455aabbcc', site: 'old' }, 4]);
    expect([b?.labels.devEui, b?.revision]).toEqual(['1122334455aabbcc', 3]);
    expect(c?.labels.devEui).toBe('not a DevEUI');
    expect(await h.redis.zrange(h.keys.labelIndex(env, 'devEui'), 0, -1)).toEqual([
      '1122334455aabbcc\nold-a',
      '1122334455aabbcc\nold-b',
      'not a DevEUI\nold-c',
    ]);
    // old-b's next change is refused until its DevEUI is mended.
    await expect(h.admin.updateDevice(env, 'old-b', { displayName: 'B' })).rejects.toMatchObject({
      code: 'DEV_EUI_TAKEN',
    });
  });
});
