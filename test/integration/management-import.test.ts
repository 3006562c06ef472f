/**
 * Devices in bulk through the management API: a 10,000-row CSV with two bad rows writes nothing
 * and names both rows, the same file mended creates every device, and again changes nothing; a dry
 * run counts without writing; the export is the same CSV; a JSON array works as the CSV does.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   response bodies are untyped on purpose: these tests check them at run time. */
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { call, startApiHarness, type ApiHarness } from './api-harness.ts';

const ADMIN = ['read', 'write', 'admin'] as const;
const HEADER = 'deviceName,displayName,definitionName,definitionIsPublic,labels,availabilityMinutes';
const row = (i: number) =>
  `sensor-${String(i).padStart(5, '0')},Sensor ${i},ComfortSensors,false,site=s${i % 7};floor=${i % 3},`;

describe('management API: importing and exporting devices', () => {
  let h: ApiHarness;
  let api: string;
  let admin: string;
  const cleanups: (() => unknown)[] = [];

  beforeAll(async () => {
    h = await startApiHarness({ roles: 'api' }, (fn) => cleanups.push(fn));
    await h.seedEnvironment('acme');
    admin = (await h.admin.createToken('acme', 'automation', 0, [...ADMIN])).token;
    const vigil = await startVigil(h.config, createLogger('silent'));
    cleanups.push(() => vigil.close());
    api = `http://127.0.0.1:${vigil.ports.api}`;
    return async () => {
      for (const fn of cleanups.reverse()) await fn();
    };
  });

  const importCsv = (csv: string, query?: string) =>
    call(api, '/devices/import', {
      token: admin,
      body: csv,
      contentType: 'text/csv',
      ...(query ? { query } : {}),
    });
  const deviceCount = async () => await h.redis.zcard(h.keys.devices('acme'));

  it('writes nothing from 10,000 rows with two bad ones, names both, then imports them all, then changes nothing', async () => {
    const rows = Array.from({ length: 10_000 }, (_, i) => row(i + 1));
    // Line 1 is the header: the row of line n is rows[n - 2].
    rows[17 - 2] = 'bad/name,Bad,ComfortSensors,false,,';
    rows[9001 - 2] = `sensor-x,Sensor X,NoSuchDefinition,false,,`;
    const before = await deviceCount();
    const rejected = await importCsv([HEADER, ...rows].join('\n'));
    expect([rejected.status, rejected.json.error.code]).toEqual([400, 'IMPORT_REJECTED']);
    expect(
      rejected.json.error.failed.map((f: { line: number; field: string; code: string }) => [
        f.line,
        f.field,
        f.code,
      ]),
    ).toEqual([
      [17, 'deviceName', 'INVALID_INPUT'],
      [9001, 'definitionName', 'DEFINITION_NOT_FOUND'],
    ]);
    expect(rejected.json.error.created).toBe(9998);
    expect(await deviceCount()).toBe(before);

    rows[17 - 2] = row(16);
    rows[9001 - 2] = row(9000);
    const csv = [HEADER, ...rows].join('\n');
    const dry = await importCsv(csv, 'dryRun=true');
    expect(dry.json.data).toMatchObject({
      created: 10_000,
      updated: 0,
      unchanged: 0,
      failedCount: 0,
      dryRun: true,
    });
    expect(await deviceCount()).toBe(before);

    const done = await importCsv(csv);
    expect(done.json.data).toMatchObject({ created: 10_000, updated: 0, unchanged: 0, failed: [] });
    expect(await deviceCount()).toBe(before + 10_000);
    const one = await call(api, '/devices/get', {
      token: admin,
      body: { deviceName: 'sensor-00017' },
      contentType: 'application/json',
    });
    expect(one.json.data).toMatchObject({
      displayName: 'Sensor 17',
      labels: { site: 's3', floor: '2' },
      revision: 1,
      availabilityMinutes: null,
    });

    const snapshot = await h.redis.hgetall(h.keys.device('acme', 'sensor-09999'));
    const again = await importCsv(csv);
    expect(again.json.data).toMatchObject({ created: 0, updated: 0, unchanged: 10_000 });
    expect(await h.redis.hgetall(h.keys.device('acme', 'sensor-09999'))).toEqual(snapshot);

    const audit = (
      await call(api, '/audit/list', {
        token: admin,
        body: { action: 'device.import' },
        contentType: 'application/json',
      })
    ).json.data.entries;
    expect(audit).toHaveLength(1);
    expect(audit[0].details).toEqual({ created: 10_000, updated: 0, unchanged: 0 });
  });

  it('updates what a row changes, leaves what a file has no column for, and exports the same CSV', async () => {
    const r = await importCsv(
      'deviceName,definitionName,labels\nsensor-00001,ComfortSensors,site=new\nsensor-00002,ComfortSensors,\n',
    );
    expect(r.json.data).toMatchObject({ created: 0, updated: 2, unchanged: 0 });
    const get = async (name: string) =>
      (
        await call(api, '/devices/get', {
          token: admin,
          body: { deviceName: name },
          contentType: 'application/json',
        })
      ).json.data;
    expect(await get('sensor-00001')).toMatchObject({
      displayName: 'Sensor 1',
      labels: { site: 'new' },
      revision: 2,
    });
    expect((await get('sensor-00002')).labels).toEqual({});

    const exported = await call(api, '/devices/export', { token: admin, method: 'POST' });
    expect(exported.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = exported.text.trimEnd().split('\n');
    expect(lines[0]).toBe(HEADER);
    expect(lines).toContain('sensor-00001,Sensor 1,ComfortSensors,false,site=new,');
    const roundTrip = await importCsv(exported.text);
    expect(roundTrip.json.data).toMatchObject({ created: 0, updated: 0, failedCount: 0 });
  });

  it('takes a JSON array of the same objects, and refuses what is neither', async () => {
    const r = await call(api, '/devices/import', {
      token: admin,
      contentType: 'application/json',
      body: [
        {
          deviceName: 'json-1',
          definitionName: 'ComfortSensors',
          labels: { site: 'x' },
          availabilityMinutes: 30,
        },
      ],
    });
    expect(r.json.data).toMatchObject({ created: 1 });
    const bad = await call(api, '/devices/import', {
      token: admin,
      contentType: 'application/json',
      body: '{"x":',
    });
    expect([bad.status, bad.json.error.code]).toEqual([400, 'INVALID_JSON']);
    const noHeader = await importCsv('json-2,ComfortSensors\n');
    expect([noHeader.status, noHeader.json.error.code, noHeader.json.error.line]).toEqual([
      400,
      'INVALID_INPUT',
      1,
    ]);
    const operator = (await h.admin.createToken('acme', 'ops', 0, ['read', 'write'])).token;
    const forbidden = await call(api, '/devices/import', {
      token: operator,
      body: HEADER,
      contentType: 'text/csv',
    });
    expect([forbidden.status, forbidden.json.error.code]).toEqual([403, 'FORBIDDEN']);
  });
});
