/**
 * A payload whose processing fails on its own data fails alone: it is logged PROCESSING_FAILED, kept
 * in the dead-letter stream (listed and requeued by `vigil queue`), counted, and the rest of its
 * step — other devices, other environments — is applied at once rather than retried behind it.
 * Two real ways to get there: a definition written by a later version, with a data type this worker
 * does not know (conversion throws), and a device with more values in one payload than the state
 * script can take (the script refuses the device).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataPointSpec, DefinitionSpec } from '../../src/domain/types.ts';
import { readEntry } from '../../src/ingest/ingest-log.ts';
import { createIngestProducer } from '../../src/queue/ingest-producer.ts';
import { ROUTING_KEY, type IngestItem } from '../../src/domain/ingest-item.ts';
import { COMFORT_PARSER, COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { provisionComfort, queueIdle, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { createCliHarness, type CliHarness } from './cli-run.ts';

const PARSER = 'function parsePayload(s) { const j = JSON.parse(s); delete j.deviceName; return j; }';
/** More data points than one Lua unpack takes: the owner's writes are cut into commands Redis takes. */
const HUGE_POINTS = 8000;

const point = (name: string, dataType: string): DataPointSpec =>
  ({ name, displayName: name, dataType, hysteresis: 0, thresholds: [] }) as unknown as DataPointSpec;

/** As a later version could store it: data point Mood has a type this version does not know. */
const FUTURE_SPEC: DefinitionSpec = {
  name: 'Future',
  manufacturer: 'Acme',
  version: '2',
  dataPoints: [point('Temperature', 'temperature'), point('Mood', 'mood')],
};
const HUGE_SPEC: DefinitionSpec = {
  name: 'Huge',
  manufacturer: 'Acme',
  version: '1',
  dataPoints: Array.from({ length: HUGE_POINTS }, (_, i) => point(`P${i}`, 'number')),
};

let cli: CliHarness;
beforeAll(() => {
  cli = createCliHarness();
});
afterAll(() => cli.close());

let sequence = 0;
/** A queued submission as the gateway makes it; every one routed to the same partition. */
function item(env: string, body: Record<string, unknown>): IngestItem {
  sequence += 1;
  return {
    id: `i${sequence}`,
    env,
    gateway: 'submit',
    via: 'http',
    receivedMs: Date.now() - 1000 + sequence,
    body: JSON.stringify(body),
    bodyIsHex: false,
    nameInBody: body.deviceName as string,
    client: 'test',
    [ROUTING_KEY]: 'one partition',
  };
}

async function vigil(p: Pipeline, args: string[]) {
  const r = await cli.run(args, { VIGIL_KEY_PREFIX: p.config.keyPrefix });
  expect(r.code, r.stderr).toBe(0);
  return r;
}

async function deadLetters(p: Pipeline) {
  const r = await vigil(p, ['queue', 'dead-letters', '--json']);
  return JSON.parse(r.stdout) as { id: string; partition: number; reason: string; items: number }[];
}

async function metric(p: Pipeline, name: string): Promise<number> {
  const text = await (await fetch(`${p.opsUrl}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

const stateOf = (p: Pipeline, env: string, device: string, sensor: string) =>
  p.redis.hget(p.keys.deviceState(env, device), `${sensor}|v`);

const logOf = async (p: Pipeline, env: string) =>
  (await p.redis.lrange(p.keys.ingestLog(env), 0, -1)).map((l) => readEntry(l));

describe('payloads whose processing fails on their own data', () => {
  it(
    'fail alone: logged, dead-lettered, counted, requeueable; the rest of the step is applied',
    { timeout: 60_000 },
    async () => {
      // No catalog cache: a fixed definition applies to the next step. A parser time far above what
      // these parsers take, so that a loaded machine does not turn a failure into PARSER_TIMEOUT.
      const p = await startPipeline({ roles: 'worker,api', catalogCacheMs: 0, sandboxTimeoutMs: 1000 });
      await provisionComfort(p, 'demo', ['neighbour']);
      await p.admin.createEnvironment('evil', 'en');
      await p.admin.applyDefinition({ kind: 'private', env: 'evil' }, COMFORT_SPEC, COMFORT_PARSER);
      await p.admin.applyDefinition({ kind: 'private', env: 'evil' }, FUTURE_SPEC, PARSER);
      await p.admin.applyDefinition({ kind: 'private', env: 'evil' }, HUGE_SPEC, PARSER);
      const device = (name: string, definitionName: string) =>
        p.admin.createDevice('evil', { name, definitionName, definitionIsPublic: false });
      await device('fine', 'ComfortSensors');
      await device('future', 'Future');
      await device('huge', 'Huge');

      // One queue entry, so one step: the failing payload sits between good ones of both tenants,
      // one of which has more data points than a script could take in one call.
      const producer = createIngestProducer({ connection: p.redis, keys: p.keys, config: p.config });
      const hugeBody: Record<string, unknown> = { deviceName: 'huge' };
      for (let i = 0; i < HUGE_POINTS; i++) hugeBody[`P${i}`] = i;
      await producer.add([
        item('demo', { deviceName: 'neighbour', Temperature: 21 }),
        item('evil', { deviceName: 'future', Temperature: 22, Mood: 'happy' }),
        item('evil', { deviceName: 'fine', Temperature: 23 }),
        item('evil', hugeBody),
        item('demo', { deviceName: 'neighbour', Temperature: 24 }),
      ]);
      expect(await p.redis.xlen(p.keys.ingestStream(producer.partitionOf(item('demo', {}))))).toBe(1);

      await eventually(() => queueIdle(p), { timeoutMs: 15_000, message: 'the entry acknowledged' });
      expect(await stateOf(p, 'demo', 'neighbour', 'Temperature')).toBe('24');
      expect(await stateOf(p, 'evil', 'fine', 'Temperature')).toBe('23');
      expect(await p.redis.exists(p.keys.deviceState('evil', 'future'))).toBe(0);
      expect(await stateOf(p, 'evil', 'huge', `P${HUGE_POINTS - 1}`)).toBe(String(HUGE_POINTS - 1));

      const evilLog = await logOf(p, 'evil');
      const byDevice = new Map(evilLog.map((e) => [e.deviceName, e]));
      expect(byDevice.get('fine')).toMatchObject({ outcome: 'accepted', code: null });
      expect(byDevice.get('future')).toMatchObject({ outcome: 'rejected', code: 'PROCESSING_FAILED' });
      expect(byDevice.get('huge')).toMatchObject({ outcome: 'accepted', code: null });
      expect((await logOf(p, 'demo')).map((e) => e.outcome)).toEqual(['accepted', 'accepted']);

      const dead = await deadLetters(p);
      expect(dead.map((d) => d.items)).toEqual([1]);
      const future = dead.find((d) => d.reason.startsWith('evil/future: '));
      expect(future?.reason).toMatch(/TypeError/);
      expect(await metric(p, 'vigil_worker_payload_failures_total')).toBe(1);
      expect(await metric(p, 'vigil_worker_dead_letter_payloads_total')).toBe(0);
      expect(await metric(p, 'vigil_worker_steps_total{result="failed"}')).toBe(0);

      // Once the definition is fixed, the operator puts the payload back and it is processed.
      await p.admin.applyDefinition(
        { kind: 'private', env: 'evil' },
        { ...FUTURE_SPEC, dataPoints: [point('Temperature', 'temperature'), point('Mood', 'string')] },
        PARSER,
      );
      await vigil(p, ['queue', 'requeue', future!.id]);
      await eventually(async () => (await stateOf(p, 'evil', 'future', 'Mood')) === '"happy"', {
        message: 'the requeued payload applied with the fixed definition',
      });
      expect(await stateOf(p, 'evil', 'future', 'Temperature')).toBe('22');
      expect(await deadLetters(p)).toEqual([]);
    },
  );
});
