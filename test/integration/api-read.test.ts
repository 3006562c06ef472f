/**
 * Golden tests of the read API's nine endpoints against docs/interface.md#endpoints: exact key sets and
 * types, the three parameter forms, ordering, and last24Hours from InfluxDB.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument --
   response bodies are untyped on purpose: these tests check their shape at run time, field by field. */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startApiHarness, type ApiHarness } from './api-harness.ts';
import { BUCKET, DETAILS, DEVICE, EVENT, expectShape, LISTED, UTC } from './api-shapes.ts';

const SENSOR_ORDER = ['Temperature', 'Humidity', 'Illuminance', 'Battery', 'CO2', 'Occupancy'];

const HOUR = 3_600_000;
const now = Date.now();
const currentHour = Math.floor(now / HOUR) * HOUR;
const t0 = now - 1000;

let h: ApiHarness;
let token: string;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  h = await startApiHarness({}, (fn) => cleanups.push(fn));
  ({ token } = await h.seedEnvironment('demo'));
  await h.setState('demo', 'device_1_hallway', 'Temperature', {
    value: 26.04,
    updatedMs: t0,
    status: 'WARNING',
    lastSuccessMs: t0 - 60_000,
  });
  await h.setState('demo', 'device_1_hallway', 'Humidity', { value: 45.25, updatedMs: t0 });
  await h.setContact('demo', 'device_1_hallway', t0);
  await h.redis.hset(
    h.keys.deviceSuppressed('demo', 'device_1_hallway'),
    'CO2',
    '0',
    'Humidity',
    String(now - 1),
  );
  await h.writeHistory('demo', 'device_1_hallway', 'Temperature', [
    { timeMs: currentHour - HOUR + 10, value: 20 },
    { timeMs: currentHour - HOUR + 20, value: 22 },
    { timeMs: currentHour + 1, value: 26.04 },
  ]);
  const event = {
    env: 'demo',
    displayName: 'Hallway',
    sensorName: 'Temperature',
    sensorType: 'tempC',
    eventCategory: 'Sensors' as const,
  };
  await h.addEvent({
    ...event,
    deviceName: 'device_1_hallway',
    sensorValue: 26.04,
    eventStatus: 'WARNING',
    eventMessage: 'Temperature - Above 25 °C - WARNING - 26.0 °C',
    receivedMs: 1_700_000_000_000,
  });
  await h.addEvent({
    ...event,
    deviceName: 'device_1_hallway',
    sensorValue: 20,
    eventStatus: 'SUCCESS',
    eventMessage: 'Temperature - Returned to success status - SUCCESS - 20.0 °C',
    receivedMs: 1_700_000_100_000,
  });
  await h.addEvent({
    ...event,
    deviceName: 'device_2_rd_office',
    displayName: 'Open-plan R&D Office',
    sensorName: 'availability',
    sensorType: 'availability',
    sensorValue: 61,
    eventStatus: 'ERROR',
    eventCategory: 'Availability',
    eventMessage: 'availability - No contact for 61 minutes - ERROR - 2023-11-14T22:13:20.000Z',
    receivedMs: 1_700_000_200_000,
  });
});

afterAll(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const get = (path: string, query?: string) =>
  call(h.baseUrl, path, { token, ...(query === undefined ? {} : { query }) });
const post = (path: string, body: unknown) => call(h.baseUrl, path, { token, body });

describe('golden shapes', () => {
  it('devices/list gives every device, sorted by deviceName, in the Device shape', async () => {
    const res = await get('/devices/list');
    expect(res.status).toBe(200);
    expect(res.json.status).toBe('success');
    expect(res.json.data.map((d: { deviceName: string }) => d.deviceName)).toEqual([
      'device_1_hallway',
      'device_2_rd_office',
      'device_3_reception',
    ]);
    for (const d of res.json.data) expectShape(d, DEVICE);
    expect(res.json.data[0]).toEqual({
      deviceName: 'device_1_hallway',
      displayName: 'Hallway',
      definitionIsPublic: false,
      definitionName: 'ComfortSensors',
      lastContactUTC: new Date(t0).toISOString(),
      labels: {},
    });
    expect(res.json.data[1].lastContactUTC).toBeNull();
  });

  it('devices/list pages by deviceName and filters by labels, still answering every device without them', async () => {
    const { token } = await h.seedEnvironment('paged');
    for (const [name, labels] of [
      ['a-1', { site: 'ams' }],
      ['a-2', { site: 'amsterdam' }],
      ['a-3', { site: 'ams', floor: '2' }],
      ['a-4', { site: 'ams' }],
    ] as const)
      await h.admin.createDevice('paged', {
        name,
        definitionName: 'ComfortSensors',
        definitionIsPublic: false,
        labels,
      });
    const names = async (body: unknown) =>
      ((await call(h.baseUrl, '/devices/list', { token, body })).json.data as { deviceName: string }[]).map(
        (d) => d.deviceName,
      );
    expect(await names({})).toHaveLength(7);
    expect(await names({ limit: 2 })).toEqual(['a-1', 'a-2']);
    expect(await names({ limit: 2, after: 'a-2' })).toEqual(['a-3', 'a-4']);
    expect(await names({ labels: { site: 'ams' } })).toEqual(['a-1', 'a-3', 'a-4']);
    expect(await names({ labels: { site: 'ams' }, limit: 1, after: 'a-1' })).toEqual(['a-3']);
    expect(await names({ labels: { site: 'ams', floor: '2' } })).toEqual(['a-3']);
    const query = await call(h.baseUrl, '/devices/list', { token, query: 'labels=site%3Dams%3Bfloor%3D2' });
    expect(query.json.data.map((d: { deviceName: string }) => d.deviceName)).toEqual(['a-3']);
    // A device whose labels changed is no longer found by its old ones.
    await h.admin.updateDevice('paged', 'a-4', { labels: { site: 'delft' } });
    expect(await names({ labels: { site: 'ams' } })).toEqual(['a-1', 'a-3']);
  });

  it('devices/listByDefinitionName and its plural alias give the devices of a definition', async () => {
    for (const path of ['/devices/listByDefinitionName', '/devices/listByDefinitionNames']) {
      const res = await post(path, { definitionName: 'ComfortSensors', definitionIsPublic: false });
      expect(res.status).toBe(200);
      expect(res.json.data).toHaveLength(3);
      for (const d of res.json.data) expectShape(d, DEVICE);
    }
  });

  it('sensors/list uses lastSuccessAt/currentSuccessAt/updatedAt, definition order, nulls before a value', async () => {
    const res = await post('/sensors/list', { deviceName: 'device_1_hallway' });
    expect(res.status).toBe(200);
    const sensors = res.json.data as Record<string, unknown>[];
    expect(sensors.map((s) => s.sensorName)).toEqual(SENSOR_ORDER);
    for (const s of sensors) expectShape(s, LISTED);
    expect(sensors[0]).toEqual({
      sensorName: 'Temperature',
      displayName: 'Temperature',
      sensorType: 'tempC',
      currentValue: '26.0 °C',
      rawValue: 26.04,
      suppressed: false,
      currentStatus: 'WARNING',
      units: ' °C',
      lastSuccessAt: new Date(t0 - 60_000).toISOString(),
      currentSuccessAt: new Date(t0).toISOString(),
      updatedAt: new Date(t0).toISOString(),
    });
    expect(sensors[1]).toMatchObject({ currentValue: '45.3 %', suppressed: false });
    expect(sensors[2]).toMatchObject({
      currentValue: null,
      rawValue: null,
      currentStatus: 'SUCCESS',
      updatedAt: null,
      lastSuccessAt: null,
      currentSuccessAt: null,
    });
    expect(sensors[4]).toMatchObject({ sensorName: 'CO2', suppressed: true });
  });

  it('sensors/details gives the UTC names and last24Hours buckets from InfluxDB', async () => {
    const res = await post('/sensors/details', { deviceName: 'device_1_hallway', sensorName: 'Temperature' });
    expect(res.status).toBe(200);
    expectShape(res.json.data, DETAILS);
    const buckets = res.json.data.last24Hours as Record<string, unknown>[];
    for (const b of buckets) expectShape(b, BUCKET);
    expect(buckets).toEqual([
      {
        sUTC: (currentHour - HOUR) / 1000,
        eUTC: currentHour / 1000,
        count: 2,
        total: 42,
        max: 22,
        min: 20,
        avg: 21,
      },
      {
        sUTC: currentHour / 1000,
        eUTC: currentHour / 1000 + 3600,
        count: 1,
        total: 26.04,
        max: 26.04,
        min: 26.04,
        avg: 26.04,
      },
    ]);
  });

  it('sensors/batchList gives {deviceName, sensors} in request order without duplicates', async () => {
    const res = await post('/sensors/batchList', {
      devices: ['device_3_reception', 'device_1_hallway', 'device_3_reception'],
    });
    expect(res.status).toBe(200);
    expect(res.json.data.map((d: { deviceName: string }) => d.deviceName)).toEqual([
      'device_3_reception',
      'device_1_hallway',
    ]);
    for (const d of res.json.data) {
      expect(Object.keys(d).sort()).toEqual(['deviceName', 'sensors']);
      for (const s of d.sensors) expectShape(s, UTC);
    }
  });

  it('sensors/batchDetails gives the requested data points with last24Hours, grouped in request order', async () => {
    const res = await post('/sensors/batchDetails', {
      sensors: [
        { deviceName: 'device_2_rd_office', sensorName: 'CO2' },
        { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
        { deviceName: 'device_2_rd_office', sensorName: 'Temperature' },
        { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
      ],
    });
    expect(res.status).toBe(200);
    expect(
      res.json.data.map((d: { deviceName: string; sensors: { sensorName: string }[] }) => [
        d.deviceName,
        d.sensors.map((s) => s.sensorName),
      ]),
    ).toEqual([
      ['device_2_rd_office', ['CO2', 'Temperature']],
      ['device_1_hallway', ['Temperature']],
    ]);
    for (const d of res.json.data) for (const s of d.sensors) expectShape(s, DETAILS);
    expect(res.json.data[1].sensors[0].last24Hours).toHaveLength(2);
  });

  it('events/list gives every event newest first in the Event shape', async () => {
    const res = await get('/events/list');
    expect(res.status).toBe(200);
    for (const e of res.json.data) expectShape(e, EVENT);
    expect(res.json.data.map((e: { receivedUTC: string }) => e.receivedUTC)).toEqual([
      '2023-11-14T22:16:40.000Z',
      '2023-11-14T22:15:00.000Z',
      '2023-11-14T22:13:20.000Z',
    ]);
  });

  it('devices/events gives one device’s events', async () => {
    const res = await post('/devices/events', { deviceName: 'device_1_hallway' });
    expect(res.status).toBe(200);
    expect(res.json.data).toHaveLength(2);
    for (const e of res.json.data) expectShape(e, EVENT);
  });

  it('events honour limit, [startUTC, endUTC), eventCategory and eventStatus', async () => {
    const data = async (attrs: Record<string, unknown>) =>
      (await post('/events/list', attrs)).json.data as { eventStatus: string }[];
    expect(await data({ limit: 1 })).toHaveLength(1);
    expect(await data({ startUTC: 1_700_000_100, endUTC: 1_700_000_200 })).toHaveLength(1);
    expect(await data({ startUTC: 1_700_000_100 })).toHaveLength(2);
    expect(await data({ eventCategory: 'Availability' })).toHaveLength(1);
    expect((await data({ eventStatus: 'WARNING', limit: 1 })).map((e) => e.eventStatus)).toEqual(['WARNING']);
  });

  it('ingest/log gives the environment’s outcomes newest first, limited', async () => {
    const entry = (id: string) => ({
      env: 'demo',
      receivedMs: now,
      ingestId: id,
      gateway: 'submit' as const,
      deviceName: 'device_1_hallway',
      outcome: 'accepted' as const,
      code: null,
      message: null,
    });
    await h.ingestLog.record([entry('a'), entry('b')]);
    const res = await get('/ingest/log', 'limit=1');
    expect(res.status).toBe(200);
    expect(res.json.data).toHaveLength(1);
    expect(res.json.data[0].ingestId).toBe('b');
    expect(Object.keys(res.json.data[0]).sort()).toEqual(
      [
        'code',
        'definitionVersion',
        'deviceName',
        'gateway',
        'ingestId',
        'message',
        'outcome',
        'receivedUTC',
      ].sort(),
    );
  });

  it('serves an OpenAPI 3.1 document naming every endpoint, without a token', async () => {
    const res = await call(h.baseUrl, '/openapi.json');
    expect(res.status).toBe(200);
    expect(res.json.openapi).toBe('3.1.0');
    for (const path of [
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
      '/login/{apiKey}',
      '/ingest/log',
    ]) {
      expect(res.json.paths[path], path).toBeDefined();
    }
  });
});

/** GET with a query string sent byte for byte (curl -G -d '{…}' sends raw JSON). */
function rawGet(path: string, rawQuery: string): Promise<{ status: number; json: { data: unknown } }> {
  return new Promise((resolve, reject) => {
    const req = request(
      `${h.baseUrl}${path}?${rawQuery}`,
      { headers: { authorization: `Bearer ${token}` } },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, json: JSON.parse(text) as { data: unknown } }),
        );
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('parameter forms', () => {
  const cases: [string, Record<string, unknown>, string][] = [
    ['/devices/list', {}, ''],
    [
      '/devices/listByDefinitionName',
      { definitionName: 'ComfortSensors', definitionIsPublic: false },
      'definitionName=ComfortSensors&definitionIsPublic=false',
    ],
    ['/sensors/list', { deviceName: 'device_1_hallway' }, 'deviceName=device_1_hallway'],
    [
      '/sensors/details',
      { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
      'deviceName=device_1_hallway&sensorName=Temperature',
    ],
    [
      '/sensors/batchList',
      { devices: ['device_1_hallway', 'device_2_rd_office'] },
      'devices=device_1_hallway&devices=device_2_rd_office',
    ],
    [
      '/sensors/batchDetails',
      { sensors: [{ deviceName: 'device_1_hallway', sensorName: 'Temperature' }] },
      `sensors=${encodeURIComponent('[{"deviceName":"device_1_hallway","sensorName":"Temperature"}]')}`,
    ],
    ['/events/list', { limit: 2, eventCategory: 'Sensors' }, 'limit=2&eventCategory=Sensors'],
    ['/devices/events', { deviceName: 'device_1_hallway', limit: 1 }, 'deviceName=device_1_hallway&limit=1'],
    ['/ingest/log', { limit: 5 }, 'limit=5'],
  ];

  it.each(cases)(
    '%s answers the same to a JSON body, query parameters and a whole-query JSON object',
    async (path, attrs, query) => {
      const body = await post(path, attrs);
      expect(body.status).toBe(200);
      const json = JSON.stringify(attrs);
      const forms = [
        await get(path, query),
        await get(path, encodeURIComponent(json)),
        await rawGet(path, json.replace(/ /g, '%20')),
        await call(h.baseUrl, path, { token, body: attrs, method: 'POST', contentType: 'application/json' }),
      ];
      for (const res of forms) {
        expect(res.status).toBe(200);
        expect(res.json.data).toEqual(body.json.data);
      }
    },
  );

  it('reads arrays given as a JSON array string in a query parameter', async () => {
    const res = await get(
      '/sensors/batchList',
      `devices=${encodeURIComponent('["device_2_rd_office","device_1_hallway"]')}`,
    );
    expect(res.json.data.map((d: { deviceName: string }) => d.deviceName)).toEqual([
      'device_2_rd_office',
      'device_1_hallway',
    ]);
  });

  it('reads definitionIsPublic=true from the query as a boolean', async () => {
    const res = await get(
      '/devices/listByDefinitionName',
      'definitionName=ComfortSensors&definitionIsPublic=true',
    );
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe('DEFINITION_NOT_FOUND');
  });
});

const hasCurl = (() => {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
})();

describe('curl, as the published examples use it', () => {
  // The server runs in this process: curl must run asynchronously, or it would wait on a blocked loop.
  const curl = async (...args: string[]): Promise<{ data: unknown }> => {
    const { stdout } = await promisify(execFile)('curl', [
      '-s',
      '--max-time',
      '20',
      '-H',
      `Authorization: Bearer ${token}`,
      ...args,
    ]);
    return JSON.parse(stdout) as { data: unknown };
  };

  it.skipIf(!hasCurl)(
    'answers curl -G -d with a JSON object, and curl -d with a form Content-Type',
    async () => {
      const expected: unknown = (
        await post('/sensors/details', { deviceName: 'device_1_hallway', sensorName: 'Temperature' })
      ).json.data;
      const json = '{"deviceName":"device_1_hallway","sensorName":"Temperature"}';
      expect((await curl('-G', `${h.baseUrl}/sensors/details`, '-d', json)).data).toEqual(expected);
      expect((await curl('-G', `${h.baseUrl}/sensors/details`, '--data-urlencode', json)).data).toEqual(
        expected,
      );
      expect((await curl(`${h.baseUrl}/sensors/details`, '-d', json)).data).toEqual(expected);
    },
  );
});

describe('event paging', () => {
  it('counts only matching events towards limit, across more events than one page', async () => {
    const { token: pagingToken } = await h.seedEnvironment('paging');
    const base = {
      env: 'paging',
      deviceName: 'device_3_reception',
      displayName: 'Reception',
      sensorName: 'CO2',
      sensorType: 'co2',
      sensorValue: 900,
      eventCategory: 'Sensors' as const,
      eventMessage: 'CO2 - Above 800 ppm - INFO - 900 ppm',
    };
    const pipe = h.redis.pipeline();
    for (let i = 0; i < 1500; i++) {
      const critical = i < 5;
      const json = JSON.stringify({
        id: `e${i}`,
        ...base,
        eventStatus: critical ? 'CRITICAL' : 'INFO',
        receivedMs: 1_700_000_000_000 + i * 1000,
      });
      pipe.zadd(h.keys.envEvents('paging'), 1_700_000_000_000 + i * 1000, json);
    }
    await pipe.exec();
    const list = (attrs: Record<string, unknown>) =>
      call(h.baseUrl, '/events/list', { token: pagingToken, body: attrs });
    const three = await list({ eventStatus: 'CRITICAL', limit: 3 });
    expect(three.json.data.map((e: { receivedUTC: string }) => e.receivedUTC)).toEqual([
      new Date(1_700_000_004_000).toISOString(),
      new Date(1_700_000_003_000).toISOString(),
      new Date(1_700_000_002_000).toISOString(),
    ]);
    expect((await list({ eventStatus: 'CRITICAL' })).json.data).toHaveLength(5);
    expect((await list({})).json.data).toHaveLength(1000);
    expect((await list({ limit: 10_000 })).json.data).toHaveLength(1500);
  });
});
