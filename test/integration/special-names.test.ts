/**
 * Names that are also members of JavaScript's Object.prototype (`constructor`, `__proto__`,
 * `toString`, …) are valid device, definition and data point names, and `constructor` a valid
 * environment name. They must work like any other name from the gateway to state, history, events
 * and the read API — and a tenant using them must never hold up another tenant's devices that share
 * its queue partition.
 */
/* eslint-disable @typescript-eslint/no-explicit-any, @typescript-eslint/no-unsafe-member-access,
   @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   response bodies are untyped on purpose: these tests check them at run time. */
import { describe, expect, it } from 'vitest';
import type { DataPointSpec, DefinitionSpec } from '../../src/domain/types.ts';
import { routingKey } from '../../src/queue/ingest-producer.ts';
import type { IngestItem } from '../../src/domain/ingest-item.ts';
import { partitionOf } from '../../src/queue/partition.ts';
import { provisionComfort, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';

const SPECIAL = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'] as const;
/** An environment name that is also an Object.prototype member (the only kind the rule allows). */
const ENV = 'constructor';
const PARSER = 'function parsePayload(s) { const j = JSON.parse(s); delete j.deviceName; return j; }';

function specialPoint(name: string): DataPointSpec {
  return {
    name,
    displayName: `${name} shown`,
    dataType: 'number',
    hysteresis: 0,
    thresholds: [{ status: 'WARNING', above: 25 }],
  };
}

/** A definition named `name` whose data points are Temperature and every special name. */
function specialSpec(name: string): DefinitionSpec {
  return {
    name,
    manufacturer: 'Acme',
    version: '1',
    dataPoints: [
      {
        name: 'Temperature',
        displayName: 'Temperature',
        dataType: 'temperature',
        hysteresis: 0,
        thresholds: [{ status: 'WARNING', above: 25 }],
      },
      ...SPECIAL.map(specialPoint),
    ],
  };
}

/** JSON text of an object with these own keys (`{__proto__: 1}` in a literal would set the prototype). */
const jsonOf = (entries: [string, unknown][]) => JSON.stringify(Object.fromEntries(entries));

/** The queue partition a /gateway/submit payload of `env`/`device` goes to. */
function partitionOfDevice(p: Pipeline, env: string, device: string): number {
  const item: IngestItem = {
    id: 'x',
    env,
    gateway: 'submit',
    via: 'http',
    receivedMs: 0,
    body: JSON.stringify({ deviceName: device }),
    bodyIsHex: false,
    client: '127.0.0.1',
  };
  return partitionOf(routingKey(item), p.config.queuePartitions);
}

/** A device name of `env` whose payloads share the partition of `env`'s `device`. */
function neighbourOf(p: Pipeline, device: string, env: string): string {
  const wanted = partitionOfDevice(p, ENV, device);
  for (let n = 0; ; n++) {
    const name = `neighbour_${n}`;
    if (partitionOfDevice(p, env, name) === wanted) return name;
  }
}

async function api(p: Pipeline, token: string, path: string, body: unknown): Promise<any> {
  const res = await fetch(`${p.apiUrl}${path}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
  });
  const json = (await res.json()) as { status: string; data?: unknown };
  expect(json.status, `${path} ${JSON.stringify(json)}`).toBe('success');
  return json.data;
}

/** History values by `device/sensor`, straight from InfluxDB. */
async function historyOf(p: Pipeline, env: string): Promise<Map<string, unknown[]>> {
  const [series] = await p.influx.query(
    `SELECT "value" FROM "raw"."readings" WHERE "env" = '${env}' GROUP BY "device", "sensor"`,
  );
  const out = new Map<string, unknown[]>();
  for (const s of series ?? [])
    out.set(
      `${s.tags?.device}/${s.tags?.sensor}`,
      s.values.map((v) => v[1]),
    );
  return out;
}

describe('names that are Object.prototype members', () => {
  it(
    'process like any other name, and never hold up another environment sharing their partition',
    { timeout: 60_000 },
    async () => {
      const p = await startPipeline({ roles: 'gateway,worker,api' });
      await p.admin.createEnvironment(ENV, 'en');
      for (const name of SPECIAL) {
        await p.admin.applyDefinition({ kind: 'private', env: ENV }, specialSpec(name), PARSER);
      }
      // Each device uses another special definition than its own name, so no lookup works by chance.
      for (const [i, name] of SPECIAL.entries()) {
        await p.admin.createDevice(ENV, {
          name,
          definitionName: SPECIAL[(i + 1) % SPECIAL.length]!,
          definitionIsPublic: false,
          displayName: `${name} device`,
        });
      }
      await p.admin.setThreshold(ENV, 'toString', 'constructor', [{ status: 'CRITICAL', above: 5 }]);
      await p.admin.suppress(ENV, 'hasOwnProperty', 'valueOf', 0);
      const { key } = await p.admin.createApiKey(ENV, 'special');
      const { token } = await p.admin.createToken(ENV, 'special', 0);

      const neighbours = SPECIAL.map((d) => neighbourOf(p, d, 'demo'));
      const { key: demoKey } = await provisionComfort(p, 'demo', [...new Set(neighbours)]);

      for (const device of SPECIAL) {
        const body = jsonOf([
          ['deviceName', device],
          ['Temperature', 21],
          ['constructor', 10],
          ['__proto__', 30],
          ['toString', 11],
          ['hasOwnProperty', 12],
          ['valueOf', 26],
        ]);
        expect((await p.post('gateway/submit', key, body)).status).toBe(202);
      }
      // Another tenant's devices in the same partitions: their values are applied, and no step
      // failed on the way (a failed step holds its partitions up: retries, then dead letters).
      for (const n of new Set(neighbours)) {
        const res = await p.post(
          'gateway/submit',
          demoKey,
          JSON.stringify({ deviceName: n, Temperature: 22.5 }),
        );
        expect(res.status).toBe(202);
      }
      await eventually(
        async () => {
          const values = await Promise.all(
            neighbours.map((n) => p.redis.hget(p.keys.deviceState('demo', n), 'Temperature|v')),
          );
          return values.every((v) => v === '22.5') ? true : undefined;
        },
        { message: "the other environment's values in the shared partitions" },
      );
      const metrics = await (await fetch(`${p.opsUrl}/metrics`)).text();
      expect(metrics).toMatch(/^vigil_worker_steps_total\{result="completed"\} [1-9]/m);
      expect(metrics).not.toMatch(/^vigil_worker_steps_total\{result="failed"\}/m);

      // State, through the read API, for every device.
      for (const device of SPECIAL) {
        const sensors = await eventually(
          async () => {
            const list = (await api(p, token, '/sensors/list', { deviceName: device })) as any[];
            return list.every((s) => s.rawValue !== null) ? list : undefined;
          },
          { timeoutMs: 10_000, message: `the values of ${device}` },
        );
        const byName = new Map(sensors.map((s) => [s.sensorName as string, s]));
        expect([...byName.keys()]).toEqual(['Temperature', ...SPECIAL]);
        expect(byName.get('Temperature')).toMatchObject({ rawValue: 21, currentValue: '21.0 °C' });
        expect(byName.get('__proto__')).toMatchObject({
          rawValue: 30,
          currentStatus: 'WARNING',
          displayName: '__proto__ shown',
          sensorType: 'number',
        });
        expect(byName.get('toString')).toMatchObject({ rawValue: 11, currentStatus: 'SUCCESS' });
        expect(byName.get('hasOwnProperty')).toMatchObject({ rawValue: 12, currentStatus: 'SUCCESS' });
        expect(byName.get('valueOf')).toMatchObject({
          rawValue: 26,
          currentStatus: 'WARNING',
          suppressed: device === 'hasOwnProperty',
        });
        // The device override of `constructor` on device `toString`.
        expect(byName.get('constructor')).toMatchObject({
          rawValue: 10,
          currentStatus: device === 'toString' ? 'CRITICAL' : 'SUCCESS',
        });
        const details = await api(p, token, '/sensors/details', {
          deviceName: device,
          sensorName: '__proto__',
        });
        expect(details).toMatchObject({ sensorName: '__proto__', rawValue: 30 });
      }
      const batch = (await api(p, token, '/sensors/batchDetails', {
        sensors: SPECIAL.map((d, i) => ({ deviceName: d, sensorName: SPECIAL[(i + 2) % SPECIAL.length] })),
      })) as any[];
      expect(batch.map((d) => [d.deviceName, d.sensors[0].sensorName, d.sensors[0].rawValue])).toEqual([
        ['constructor', 'toString', 11],
        ['__proto__', 'hasOwnProperty', 12],
        ['toString', 'valueOf', 26],
        ['hasOwnProperty', 'constructor', 10],
        ['valueOf', '__proto__', 30],
      ]);

      // Events on threshold crossings: not for the suppressed data point.
      for (const device of SPECIAL) {
        const events = (await api(p, token, '/devices/events', { deviceName: device })) as any[];
        const crossed = events.map((e) => `${e.sensorName} ${e.eventStatus}`).sort();
        const expected = ['__proto__ WARNING'];
        if (device !== 'hasOwnProperty') expected.push('valueOf WARNING');
        if (device === 'toString') expected.push('constructor CRITICAL');
        expect(crossed, device).toEqual(expected.sort());
        for (const e of events)
          expect(e).toMatchObject({ deviceName: device, displayName: `${device} device` });
      }
      const devices = (await api(p, token, '/devices/list', {})) as any[];
      expect(devices.map((d) => d.deviceName).sort()).toEqual([...SPECIAL].sort());
      expect(devices.every((d) => typeof d.lastContactUTC === 'string')).toBe(true);

      // History in InfluxDB: one value per device and data point.
      const history = await eventually(
        async () => {
          const h = await historyOf(p, ENV);
          return h.size === SPECIAL.length * (SPECIAL.length + 1) ? h : undefined;
        },
        { timeoutMs: 10_000, message: 'the history of every value' },
      );
      for (const device of SPECIAL) {
        expect(history.get(`${device}/Temperature`)).toEqual([21]);
        expect(history.get(`${device}/__proto__`)).toEqual([30]);
        expect(history.get(`${device}/constructor`)).toEqual([10]);
      }

      // Every payload accepted without a problem.
      const log = (await api(p, token, '/ingest/log', {})) as any[];
      expect(log.map((e) => [e.deviceName, e.outcome, e.code]).sort()).toEqual(
        SPECIAL.map((d) => [d, 'accepted', null]).sort(),
      );
      expect(({} as Record<string, unknown>).rules).toBeUndefined();
    },
  );
});
