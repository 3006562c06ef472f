/**
 * Property-based fuzzing of everything a stranger can reach: the six gateway paths and MQTT topics
 * (random bytes, deep JSON, huge strings, unicode, wrong types, prototype-pollution keys) and every
 * read API endpoint (random attribute names, types and shapes, in each of the three forms). The
 * service never answers 5xx to bad input, never crashes, and stays ready; the worker records each
 * payload's fate with a catalogue code and never an internal error.
 *
 * JavaScript's special property names (Object.prototype's members, `__proto__`, `prototype`) are
 * valid device and data point names: devices so named exist, with data points so named, and the
 * fuzz uses them as device names in payloads, keys of parser results and attribute values.
 */
import fc from 'fast-check';
import mqtt from 'mqtt';
import { describe, expect, it } from 'vitest';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { GATEWAY_PATHS } from '../../src/domain/ingest-item.ts';
import { brokerFor } from '../support/fault-run.ts';
import { provisionComfort, queueIdle, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { readEntry } from '../../src/ingest/ingest-log.ts';

const RUNS = process.env.VIGIL_TEST_LONG ? 3000 : 300;

/** Names that find something in a plain object that never had them: all valid device and data point names. */
const SPECIAL_NAMES = [
  ...new Set([...Object.getOwnPropertyNames(Object.prototype), 'prototype', '__proto__']),
];
const specialName = fc.constantFrom(...SPECIAL_NAMES);
/** Parses every key as a data point (the Special definition's data points are the special names). */
const SPECIAL_PARSER = 'function parsePayload(s) { const j = JSON.parse(s); delete j.deviceName; return j; }';
const SPECIAL_SPEC: DefinitionSpec = {
  name: 'Special',
  manufacturer: 'Acme',
  version: '1',
  dataPoints: SPECIAL_NAMES.map((name) => ({
    name,
    displayName: name,
    dataType: 'number',
    hysteresis: 0,
    thresholds: [{ status: 'WARNING', above: 25 }],
  })),
};

/** Payloads of the special-named devices, keyed by special names (own keys, as JSON has them). */
const specialPayload = fc
  .tuple(
    specialName,
    fc.array(fc.tuple(specialName, fc.oneof(fc.double(), fc.integer(), fc.jsonValue({ maxDepth: 2 }))), {
      maxLength: 8,
    }),
  )
  .map(([device, values]) => JSON.stringify(Object.fromEntries([['deviceName', device], ...values])));

const PREPARSER =
  'function parsePayload(s) { const j = JSON.parse(s); return { deviceName: j.deviceName, payload: j }; }';

/** Deep nesting of arrays and objects, as text (JSON.parse and JSON.stringify both meet it). */
const deepJson = fc
  .tuple(fc.integer({ min: 1, max: 200_000 }), fc.boolean())
  .map(([depth, objects]) =>
    objects
      ? `${'{"deviceName":"d1","a":'.repeat(depth)}1${'}'.repeat(depth)}`
      : `{"deviceName":"d1","Temperature":${'['.repeat(depth)}${']'.repeat(depth)}}`,
  );

const pollution = fc.constantFrom(
  '{"__proto__":{"polluted":"yes"},"deviceName":"d1","Temperature":20}',
  '{"deviceName":"d1","constructor":{"prototype":{"polluted":"yes"}},"Temperature":20}',
  '{"deviceName":"__proto__","Temperature":20}',
  '{"deviceName":"constructor","Temperature":20}',
  '{"deviceName":"d1","__proto__":{"Temperature":99}}',
  '{"deviceName":{"__proto__":{"toString":1}}}',
  '[{"__proto__":[]}]',
);

const wrongTypes = fc
  .record({
    deviceName: fc.oneof(fc.jsonValue(), fc.constant('d1'), fc.string({ unit: 'grapheme', maxLength: 300 })),
    Temperature: fc.jsonValue(),
    Humidity: fc.oneof(fc.double(), fc.string(), fc.constant(null)),
    Occupancy: fc.oneof(fc.boolean(), fc.bigInt().map(String), fc.constant('NaN')),
    Battery: fc.oneof(fc.double({ noNaN: false }), fc.constant(1e308), fc.constant(-0)),
  })
  .map((o) => JSON.stringify(o));

const body = fc.oneof(
  fc.uint8Array({ maxLength: 2000 }).map((b) => Buffer.from(b)),
  deepJson,
  pollution,
  wrongTypes,
  fc.string({ unit: 'grapheme', maxLength: 500 }),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.integer({ min: 200_000, max: 400_000 }).map((n) => `{"deviceName":"d1","s":"${'x'.repeat(n)}"}`),
  fc.string({ unit: 'binary', maxLength: 200 }).map((s) => `{"deviceName":"${s}"}`),
  specialPayload,
);

const contentType = fc.constantFrom(
  'application/json',
  'application/x-www-form-urlencoded',
  'text/plain; charset=latin1',
  'multipart/form-data; boundary=x',
  'application/json; charset=utf-16',
  'garbage/¿',
);

async function setUp(): Promise<{ p: Pipeline; key: string; token: string }> {
  const p = await startPipeline({ roles: 'gateway,mqtt,worker,api', mqttEnabled: true });
  const { key } = await provisionComfort(p, 'acme', ['d1', 'd2']);
  await p.admin.applyDefinition({ kind: 'private', env: 'acme' }, SPECIAL_SPEC, SPECIAL_PARSER);
  for (const name of SPECIAL_NAMES) {
    await p.admin.createDevice('acme', { name, definitionName: 'Special', definitionIsPublic: false });
  }
  await p.admin.setPreparser('acme', PREPARSER, false);
  const { token } = await p.admin.createToken('acme', 'fuzz', 0);
  return { p, key, token };
}

async function expectReady(p: Pipeline): Promise<void> {
  const res = await fetch(`${p.apiUrl}/readyz`);
  expect(res.status).toBe(200);
  await res.arrayBuffer();
}

/** The catalogue envelope of an error answer. */
function expectEnvelope(status: number, text: string): void {
  if (status < 400) return;
  if (status === 431 || status === 414) return; // Node's own refusal of an oversize head: no body
  const parsed = JSON.parse(text) as { status: string; error: { code: string; message: string } };
  expect(parsed.status).toBe('error');
  expect(parsed.error.code).toMatch(/^[A-Z_]+$/);
  expect(text).not.toMatch(/node_modules|\.ts:\d|\n\s+at /);
}

describe('hostile input', () => {
  it(
    'never answers 5xx on a gateway path, stays ready and logs only catalogue codes',
    { timeout: 180_000 },
    async () => {
      const { p, key } = await setUp();
      const kinds = Object.values(GATEWAY_PATHS);
      const statuses = new Map<number, number>();
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(...kinds),
          body,
          contentType,
          fc.boolean(),
          async (path, b, type, named) => {
            const query = named ? '?deviceName=d1' : '';
            const res = await fetch(`${p.gatewayUrl}/${path}/${key}${query}`, {
              method: 'POST',
              body: b,
              headers: { 'content-type': type },
            });
            const text = await res.text();
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            expect(res.status).toBeLessThan(500);
            expectEnvelope(res.status, text);
          },
        ),
        { numRuns: RUNS },
      );
      console.info(`gateway answers: ${JSON.stringify(Object.fromEntries(statuses))}`);
      // The host's prototypes are untouched (the gateway runs in this process).
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      await eventually(() => queueIdle(p), { timeoutMs: 60_000, message: 'the fuzzed payloads processed' });
      await expectReady(p);
      const codes = new Set(
        (await p.redis.lrange(p.keys.ingestLog('acme'), 0, -1)).map((l) => readEntry(l).code),
      );
      console.info(`ingestion log codes: ${[...codes].join(', ')}`);
      expect(codes.has('INTERNAL')).toBe(false);
      expect(codes.has('PROCESSING_FAILED')).toBe(false);
      // The worker still processes a good payload.
      const res = await p.post('gateway/submit', key, '{"deviceName":"d2","Temperature":21.5}');
      expect(res.status).toBe(202);
      await eventually(
        async () =>
          (await p.redis.hget(p.keys.deviceState('acme', 'd2'), 'Temperature|v')) === '21.5'
            ? true
            : undefined,
        { timeoutMs: 15_000, message: 'a good payload after the fuzzing' },
      );
      // And one of a device and data point with special names.
      const special = JSON.stringify(
        Object.fromEntries([
          ['deviceName', '__proto__'],
          ['__proto__', 26],
          ['constructor', 7],
        ]),
      );
      expect((await p.post('gateway/submit', key, special)).status).toBe(202);
      await eventually(
        async () => {
          const state = p.keys.deviceState('acme', '__proto__');
          const [proto, ctor] = await p.redis.hmget(state, '__proto__|v', 'constructor|v');
          return proto === '26' && ctor === '7' ? true : undefined;
        },
        { timeoutMs: 15_000, message: 'a good payload of device __proto__ after the fuzzing' },
      );
    },
  );

  it(
    'survives random MQTT topics and payloads and keeps acknowledging good ones',
    { timeout: 120_000 },
    async () => {
      const { p, key } = await setUp();
      const url = await brokerFor(p);
      const topic = fc.oneof(
        fc.constantFrom(...Object.values(GATEWAY_PATHS)).map((t) => `${t}/${key}`),
        fc.constantFrom(
          `raw/${key}/d1`,
          `raw/${key}/../d2`,
          `gateway/submit/${key}/x`,
          `gateway/submit`,
          `$SYS/x`,
        ),
        fc
          .string({ unit: 'grapheme', minLength: 1, maxLength: 300 })
          .filter((t) => !t.includes('+') && !t.includes('#') && !t.includes(String.fromCharCode(0))),
      );
      await fc.assert(
        fc.asyncProperty(topic, body, async (t, b) => {
          const client = await mqtt.connectAsync(url, {
            reconnectPeriod: 0,
            connectTimeout: 5000,
            username: 'fuzz',
            password: key,
          });
          client.on('error', () => undefined);
          await Promise.race([
            client.publishAsync(t, b, { qos: 1 }).catch(() => undefined),
            new Promise<void>((resolve) => client.once('close', () => resolve())),
            new Promise((resolve) => setTimeout(resolve, 5000)),
          ]);
          await client.endAsync(true);
        }),
        { numRuns: Math.ceil(RUNS / 2) },
      );
      await expectReady(p);
      const client = await mqtt.connectAsync(url, { username: 'device', password: key });
      await client.publishAsync(`gateway/submit/${key}`, '{"deviceName":"d1","Temperature":19}', { qos: 1 });
      await client.endAsync();
      await eventually(
        async () =>
          (await p.redis.hget(p.keys.deviceState('acme', 'd1'), 'Temperature|v')) === '19' ? true : undefined,
        { timeoutMs: 30_000, message: 'a good MQTT payload after the fuzzing' },
      );
    },
  );

  it('never answers 5xx on a read API endpoint, whatever the attributes', { timeout: 180_000 }, async () => {
    const { p, token } = await setUp();
    const endpoints = [
      '/devices/list',
      '/devices/listByDefinitionName',
      '/devices/listByDefinitionNames',
      '/devices/events',
      '/sensors/list',
      '/sensors/details',
      '/sensors/batchList',
      '/sensors/batchDetails',
      '/sensors/export',
      '/events/list',
      '/ingest/log',
    ];
    const names = [
      'deviceName',
      'sensorName',
      'devices',
      'sensors',
      'definitionName',
      'definitionIsPublic',
      'startUTC',
      'endUTC',
      'limit',
      'eventCategory',
      'eventStatus',
      'format',
      ...SPECIAL_NAMES,
    ];
    const value = fc.oneof(
      fc.jsonValue({ maxDepth: 4 }),
      fc.constantFrom(
        'd1',
        'Temperature',
        'ComfortSensors',
        'Special',
        'true',
        '-1',
        '1e400',
        'NaN',
        '9'.repeat(400),
      ),
      specialName,
      fc.array(fc.constantFrom('d1', 'd2', 'nope', '', ...SPECIAL_NAMES), { maxLength: 1200 }),
      fc.array(fc.record({ deviceName: fc.jsonValue(), sensorName: fc.jsonValue() }, { requiredKeys: [] })),
      fc.array(fc.record({ deviceName: specialName, sensorName: specialName })),
      fc.string({ unit: 'grapheme', maxLength: 200 }),
    );
    const attrs = fc.dictionary(fc.oneof(fc.constantFrom(...names), fc.string({ maxLength: 20 })), value, {
      maxKeys: 6,
    });
    const form = fc.constantFrom('body', 'query', 'wholeQuery', 'rawBody');
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom(...endpoints),
        attrs,
        form,
        fc.constantFrom('GET', 'POST'),
        fc.string({ unit: 'binary', maxLength: 300 }),
        async (path, a, how, method, raw) => {
          let url = `${p.apiUrl}${path}`;
          let sent: string | undefined;
          if (how === 'query') {
            const q = new URLSearchParams();
            for (const [k, v] of Object.entries(a))
              q.append(k, typeof v === 'string' ? v : JSON.stringify(v));
            url += `?${q.toString()}`;
          } else if (how === 'wholeQuery') url += `?${encodeURIComponent(JSON.stringify(a))}`;
          else if (method === 'POST') sent = how === 'rawBody' ? raw : JSON.stringify(a);
          const res = await fetch(url, {
            method,
            ...(sent !== undefined ? { body: sent } : {}),
            headers: { authorization: `Bearer ${token}`, accept: 'application/json' },
          });
          const text = await res.text();
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          expect(res.status, `${method} ${path} ${how} ${text.slice(0, 200)}`).toBeLessThan(500);
          expectEnvelope(res.status, text);
        },
      ),
      { numRuns: RUNS * 2 },
    );
    console.info(`read API answers: ${JSON.stringify(Object.fromEntries(statuses))}`);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    await expectReady(p);
  });
});
