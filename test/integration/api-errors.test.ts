/**
 * Every error of the read API (docs/interface.md#errors) in the shared envelope, and tenant isolation: a
 * token of one environment sees nothing of another, whose devices answer exactly like missing ones.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call --
   response bodies are untyped on purpose: these tests check them at run time. */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createInfluxClient } from '../../src/history/influx-client.ts';
import {
  call,
  COMFORT_SENSORS,
  PARSER,
  startApiHarness,
  type ApiHarness,
  type CallResult,
} from './api-harness.ts';

let h: ApiHarness;
let tokenA: string;
let tokenB: string;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  h = await startApiHarness({}, (fn) => cleanups.push(fn));
  ({ token: tokenA } = await h.seedEnvironment('env-a'));
  await h.admin.createEnvironment('env-b', 'en');
  await h.admin.applyDefinition(
    { kind: 'private', env: 'env-b' },
    { ...COMFORT_SENSORS, name: 'PrivateB' },
    PARSER,
  );
  await h.admin.applyDefinition({ kind: 'public' }, { ...COMFORT_SENSORS, name: 'SharedPublic' }, PARSER);
  await h.admin.createDevice('env-b', {
    name: 'b_only',
    definitionName: 'PrivateB',
    definitionIsPublic: false,
  });
  await h.admin.createDevice('env-b', {
    name: 'b_public',
    definitionName: 'SharedPublic',
    definitionIsPublic: true,
  });
  ({ token: tokenB } = await h.admin.createToken('env-b', 'b', 0));
  await h.setState('env-b', 'b_only', 'Temperature', { value: 30, updatedMs: Date.now() });
  await h.addEvent({
    env: 'env-b',
    deviceName: 'b_only',
    displayName: 'b_only',
    sensorName: 'Temperature',
    sensorType: 'tempC',
    sensorValue: 30,
    eventStatus: 'CRITICAL',
    eventCategory: 'Sensors',
    eventMessage: 'Temperature - Above 29 °C - CRITICAL - 30.0 °C',
    receivedMs: Date.now(),
  });
  await h.ingestLog.record([
    {
      env: 'env-b',
      receivedMs: Date.now(),
      ingestId: 'b-1',
      gateway: 'submit',
      deviceName: 'b_only',
      outcome: 'accepted',
      code: null,
      message: null,
    },
  ]);
});

afterAll(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const postA = (path: string, body: unknown) => call(h.baseUrl, path, { token: tokenA, body });

function expectError(res: CallResult, status: number, code: string, attribute?: string) {
  expect(res.status).toBe(status);
  expect(res.json.status).toBe('error');
  expect(res.json.error.code).toBe(code);
  expect(typeof res.json.error.message).toBe('string');
  if (attribute !== undefined) expect(res.json.error.attribute).toBe(attribute);
  expect(res.text).not.toMatch(/\bat .*\.ts:\d+|Error:/);
}

const ENDPOINTS = [
  '/devices/list',
  '/devices/listByDefinitionName',
  '/devices/listByDefinitionNames',
  '/sensors/list',
  '/sensors/details',
  '/sensors/batchList',
  '/sensors/batchDetails',
  '/sensors/export',
  '/events/list',
  '/devices/events',
  '/ingest/log',
];

describe('errors', () => {
  it.each(ENDPOINTS)('%s answers 401 UNAUTHORIZED without a valid token', async (path) => {
    expectError(await call(h.baseUrl, path), 401, 'UNAUTHORIZED');
    expectError(
      await call(h.baseUrl, path, { token: 'vt_not-a-real-token-at-all-000000' }),
      401,
      'UNAUTHORIZED',
    );
    expectError(await call(h.baseUrl, path, { headers: { authorization: tokenA } }), 401, 'UNAUTHORIZED');
  });

  it.each([
    ['/devices/listByDefinitionName', {}, 'definitionName'],
    ['/devices/listByDefinitionName', { definitionName: 'ComfortSensors' }, 'definitionIsPublic'],
    ['/sensors/list', {}, 'deviceName'],
    ['/sensors/details', { deviceName: 'device_1_hallway' }, 'sensorName'],
    ['/sensors/batchList', {}, 'devices'],
    ['/sensors/batchDetails', {}, 'sensors'],
    ['/sensors/export', { deviceName: 'device_1_hallway' }, 'sensorName'],
    ['/devices/events', {}, 'deviceName'],
  ])('%s answers 400 MISSING_ATTRIBUTE naming the attribute (%j)', async (path, body, attribute) => {
    expectError(await postA(path, body), 400, 'MISSING_ATTRIBUTE', attribute);
  });

  it.each([
    [
      '/devices/listByDefinitionName',
      { definitionName: 'ComfortSensors', definitionIsPublic: 'maybe' },
      'definitionIsPublic',
    ],
    ['/sensors/list', { deviceName: 42 }, 'deviceName'],
    ['/sensors/batchList', { devices: [1, 2] }, 'devices'],
    ['/sensors/batchDetails', { sensors: [{ deviceName: 'x' }] }, 'sensors'],
    [
      '/sensors/export',
      { deviceName: 'device_1_hallway', sensorName: 'Temperature', startUTC: 'soon' },
      'startUTC',
    ],
    [
      '/sensors/export',
      { deviceName: 'device_1_hallway', sensorName: 'Temperature', format: 'xml' },
      'format',
    ],
    [
      '/sensors/export',
      { deviceName: 'device_1_hallway', sensorName: 'Temperature', startUTC: 10, endUTC: 5 },
      'endUTC',
    ],
    ['/events/list', { limit: 0 }, 'limit'],
    ['/events/list', { limit: 10_001 }, 'limit'],
    ['/events/list', { eventStatus: 'BAD' }, 'eventStatus'],
    ['/events/list', { eventCategory: 'Other' }, 'eventCategory'],
    ['/ingest/log', { limit: 'all' }, 'limit'],
  ])('%s answers 400 INVALID_ATTRIBUTE naming the attribute (%j)', async (path, body, attribute) => {
    expectError(await postA(path, body), 400, 'INVALID_ATTRIBUTE', attribute);
  });

  it('answers 400 INVALID_JSON to a body that is not a JSON object', async () => {
    expectError(
      await call(h.baseUrl, '/sensors/list', {
        token: tokenA,
        body: '{"deviceName":',
        contentType: 'application/json',
      }),
      400,
      'INVALID_JSON',
    );
  });

  it.each([
    ['/sensors/list', { deviceName: 'nope' }, 'DEVICE_NOT_FOUND'],
    ['/sensors/details', { deviceName: 'nope', sensorName: 'Temperature' }, 'DEVICE_NOT_FOUND'],
    ['/sensors/details', { deviceName: 'device_1_hallway', sensorName: 'Nope' }, 'SENSOR_NOT_FOUND'],
    ['/sensors/export', { deviceName: 'nope', sensorName: 'Temperature' }, 'DEVICE_NOT_FOUND'],
    ['/sensors/export', { deviceName: 'device_1_hallway', sensorName: 'temperature' }, 'SENSOR_NOT_FOUND'],
    ['/devices/events', { deviceName: 'nope' }, 'DEVICE_NOT_FOUND'],
    [
      '/devices/listByDefinitionName',
      { definitionName: 'Nope', definitionIsPublic: false },
      'DEFINITION_NOT_FOUND',
    ],
  ])('%s answers 404 for an unknown name (%j)', async (path, body, code) => {
    expectError(await postA(path, body), 404, code);
  });

  it('fails a whole batch naming its one unknown device or data point', async () => {
    const list = await postA('/sensors/batchList', { devices: ['device_1_hallway', 'ghost'] });
    expectError(list, 404, 'DEVICE_NOT_FOUND');
    expect(list.json.error.deviceName).toBe('ghost');
    const details = await postA('/sensors/batchDetails', {
      sensors: [
        { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
        { deviceName: 'device_1_hallway', sensorName: 'Ghost' },
      ],
    });
    expectError(details, 404, 'SENSOR_NOT_FOUND');
    expect(details.json.error.sensorName).toBe('Ghost');
  });

  it('answers 400 BATCH_TOO_LARGE above 1,000 items and accepts exactly 1,000', async () => {
    const names = (n: number) => Array.from({ length: n }, () => 'device_1_hallway');
    expectError(await postA('/sensors/batchList', { devices: names(1001) }), 400, 'BATCH_TOO_LARGE');
    const refs = Array.from({ length: 1001 }, () => ({ deviceName: 'device_1_hallway', sensorName: 'CO2' }));
    expectError(await postA('/sensors/batchDetails', { sensors: refs }), 400, 'BATCH_TOO_LARGE');
    const ok = await postA('/sensors/batchList', { devices: names(1000) });
    expect(ok.status).toBe(200);
    expect(ok.json.data).toHaveLength(1);
  });

  it('answers 404 NOT_FOUND to an unknown path (the root sends to the console), 400 to a path that is not percent-encoding, 405 to another method', async () => {
    expectError(await call(h.baseUrl, '/sensors/nothing', { token: tokenA }), 404, 'NOT_FOUND');
    expectError(await call(h.baseUrl, '/nothing', {}), 404, 'NOT_FOUND');
    // The root is the web console's.
    const root = await fetch(`${h.baseUrl}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).toEqual([302, '/console/']);
    expectError(await call(h.baseUrl, '/login/%E0%A4%A', { body: {} }), 400, 'BAD_REQUEST');
    const put = await call(h.baseUrl, '/devices/list', { token: tokenA, method: 'PUT', body: {} });
    expectError(put, 405, 'METHOD_NOT_ALLOWED');
    expect(put.headers.get('allow')).toBe('GET, POST');
  });

  it('matches paths as express did: any letter case, one trailing slash allowed', async () => {
    for (const path of ['/devices/list', '/Devices/List', '/devices/list/']) {
      const res = await call(h.baseUrl, path, { token: tokenA });
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    }
    expectError(await call(h.baseUrl, '/devices/list//', { token: tokenA }), 404, 'NOT_FOUND');
  });

  it('reads a body in its declared charset and refuses one it cannot read', async () => {
    const latin1 = await call(h.baseUrl, '/sensors/list', {
      token: tokenA,
      body: '{"deviceName":"device_1_hallway"}',
      contentType: 'application/json; charset=ISO-8859-1',
    });
    expect(latin1.status).toBe(200);
    const odd = await call(h.baseUrl, '/sensors/list', {
      token: tokenA,
      body: '{"deviceName":"device_1_hallway"}',
      contentType: 'application/json; charset=utf-16',
    });
    expectError(odd, 400, 'INVALID_JSON');
  });

  it('answers 500 INTERNAL with a generic message to an unexpected fault, never its details', async () => {
    const url = await h.startApp({
      last24Hours: () => Promise.reject(new Error('secret internal detail at /srv/vigil')),
    });
    const res = await call(url, '/sensors/details', {
      token: tokenA,
      body: { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
    });
    expectError(res, 500, 'INTERNAL');
    expect(res.text).not.toContain('secret');
  });

  it('answers 503 UNAVAILABLE with Retry-After when InfluxDB cannot be reached', async () => {
    const url = await h.startApp({
      influx: createInfluxClient({ url: 'http://127.0.0.1:1', database: 'x', timeoutMs: 500 }),
    });
    const res = await call(url, '/sensors/details', {
      token: tokenA,
      body: { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
    });
    expectError(res, 503, 'UNAVAILABLE');
    expect(res.headers.get('retry-after')).toBe('1');
  });
});

describe('tenant isolation', () => {
  it('answers another environment’s device exactly like a missing one', async () => {
    const other = await postA('/sensors/list', { deviceName: 'b_only' });
    const missing = await postA('/sensors/list', { deviceName: 'zz_missing' });
    expectError(other, 404, 'DEVICE_NOT_FOUND');
    expect(other.json.error.message.replace('b_only', 'X')).toBe(
      missing.json.error.message.replace('zz_missing', 'X'),
    );
    for (const [path, body] of [
      ['/sensors/details', { deviceName: 'b_only', sensorName: 'Temperature' }],
      ['/sensors/batchList', { devices: ['b_only'] }],
      ['/sensors/batchDetails', { sensors: [{ deviceName: 'b_only', sensorName: 'Temperature' }] }],
      ['/sensors/export', { deviceName: 'b_only', sensorName: 'Temperature' }],
      ['/devices/events', { deviceName: 'b_only' }],
    ] as const) {
      expectError(await postA(path, body), 404, 'DEVICE_NOT_FOUND');
    }
  });

  it('lists none of another environment’s devices, events or ingestion log', async () => {
    const devices = await postA('/devices/list', {});
    expect(devices.json.data.map((d: { deviceName: string }) => d.deviceName)).not.toContain('b_only');
    expect((await postA('/events/list', {})).json.data).toEqual([]);
    expect((await postA('/ingest/log', {})).json.data).toEqual([]);
    const b = await call(h.baseUrl, '/events/list', { token: tokenB });
    expect(b.json.data).toHaveLength(1);
    const bLog = await call(h.baseUrl, '/ingest/log', { token: tokenB });
    expect(bLog.json.data.map((e: { ingestId: string }) => e.ingestId)).toEqual(['b-1']);
  });

  it('hides another environment’s private definitions but shares public ones', async () => {
    expectError(
      await postA('/devices/listByDefinitionName', { definitionName: 'PrivateB', definitionIsPublic: false }),
      404,
      'DEFINITION_NOT_FOUND',
    );
    const shared = await postA('/devices/listByDefinitionName', {
      definitionName: 'SharedPublic',
      definitionIsPublic: true,
    });
    expect(shared.status).toBe(200);
    expect(shared.json.data).toEqual([]);
    const sharedB = await call(h.baseUrl, '/devices/listByDefinitionName', {
      token: tokenB,
      body: { definitionName: 'SharedPublic', definitionIsPublic: true },
    });
    expect(sharedB.json.data.map((d: { deviceName: string }) => d.deviceName)).toEqual(['b_public']);
  });
});
