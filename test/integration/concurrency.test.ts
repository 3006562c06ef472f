/**
 * Many worker processes and a crash must give the same state and the same events as one worker
 * processing in order (issue: processing). 4 worker processes, 20,000 payloads for 50 devices with
 * values that cross thresholds both ways; one worker is SIGKILLed mid-run.
 */
import { describe, expect, it } from 'vitest';
import { evaluateStatus } from '../../src/domain/thresholds.ts';
import type { ThresholdSet } from '../../src/domain/types.ts';
import { decodePoint } from '../../src/state/point-record.ts';
import { COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { provisionComfort, queueIdle, startPipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { spawnVigil } from '../support/workers.ts';

const DEVICES = 50;
const PER_DEVICE = Number(process.env.VIGIL_TEST_LONG ? 2000 : 400);

/** Deterministic noisy wave between ~11 and ~33 °C. */
function series(device: number): number[] {
  let seed = device * 7919 + 1;
  const rnd = () => ((seed = (seed * 48271) % 2147483647) / 2147483647) * 2 - 1;
  return Array.from(
    { length: PER_DEVICE },
    (_, i) => Math.round((22 + 11 * Math.sin(i / 17 + device) + rnd() * 0.9) * 100) / 100,
  );
}

function inOrderEvents(values: number[], times: number[], set: ThresholdSet): string[] {
  let rule = -1;
  let status = 'SUCCESS';
  const out: string[] = [];
  values.forEach((v, i) => {
    const next = evaluateStatus(v, set, rule);
    if (next.status !== status) out.push(`${times[i]}:${next.status}`);
    rule = next.ruleIndex;
    status = next.status;
  });
  return out;
}

describe('concurrent workers', () => {
  it(
    'gives the state and events of an in-order run with 4 worker processes and one SIGKILLed',
    { timeout: 240_000 },
    async () => {
      const p = await startPipeline({ roles: 'gateway', partitionLeaseMs: 1000 });
      const names = Array.from({ length: DEVICES }, (_, d) => `dev-${d}`);
      const { key } = await provisionComfort(p, 'acme', names);
      await p.admin.setPreparser(
        'acme',
        'function parsePayload(s) { const j = JSON.parse(s); return { deviceName: j.deviceName, time: j.t, payload: { Temperature: j.v } }; }',
        true,
      );
      const base = Date.now() - 3 * 3600_000;
      const times = Array.from({ length: PER_DEVICE }, (_, i) => base + i * 1000);
      const values = names.map((_, d) => series(d));

      const workers = Array.from({ length: 4 }, () =>
        spawnVigil(p.config, { VIGIL_ROLES: 'worker', VIGIL_LOG_LEVEL: 'error' }),
      );
      let sent = 0;
      const killAt = Math.floor((DEVICES * PER_DEVICE) / 3);
      let killed = false;
      // Each device sends its payloads in measurement order, one after the other; devices in parallel.
      await Promise.all(
        names.map(async (name, d) => {
          for (let i = 0; i < PER_DEVICE; i++) {
            const res = await p.post(
              'gateway/submit',
              key,
              JSON.stringify({ deviceName: name, t: times[i], v: values[d]![i] }),
            );
            expect(res.status).toBe(202);
            await res.arrayBuffer();
            sent += 1;
            if (!killed && sent >= killAt) {
              killed = true;
              await workers[0]!.kill('SIGKILL');
            }
          }
        }),
      );
      expect(killed).toBe(true);
      // State and events are written before an entry is acknowledged: an idle queue means all is there.
      await eventually(() => queueIdle(p), { timeoutMs: 180_000, message: 'the queue to drain' });

      const set: ThresholdSet = {
        rules: COMFORT_SPEC.dataPoints[0]!.thresholds,
        hysteresis: COMFORT_SPEC.dataPoints[0]!.hysteresis,
      };
      let expectedEvents = 0;
      const mismatches: string[] = [];
      const pipeline = p.redis.pipeline();
      for (const name of names) {
        pipeline.hmgetBuffer(p.keys.deviceState('acme', name), 'Temperature|v', 'Temperature|p');
        pipeline.zrange(p.keys.deviceEvents('acme', name), 0, -1);
      }
      const results = (await pipeline.exec())!.map(([err, r]) => {
        if (err) throw err;
        return r;
      });
      names.forEach((name, d) => {
        const [value, packed] = results[d * 2] as [Buffer, Buffer];
        expect(Number(value.toString())).toBe(values[d]![PER_DEVICE - 1]);
        expect(decodePoint(packed)?.updatedMs).toBe(times[PER_DEVICE - 1]);
        const stored = (results[d * 2 + 1] as string[])
          .map((j) => JSON.parse(j) as { id: string; eventStatus: string })
          .map((e) => `${/\/(\d+)\.\d+$/.exec(e.id)![1]}:${e.eventStatus}`)
          .sort();
        const expected = inOrderEvents(values[d]!, times, set).sort();
        expectedEvents += expected.length;
        if (stored.join() !== expected.join())
          mismatches.push(`${name}: ${stored.length} stored vs ${expected.length} expected`);
      });
      expect(expectedEvents).toBeGreaterThan(DEVICES * 4);
      expect(mismatches).toEqual([]);
    },
  );
});
