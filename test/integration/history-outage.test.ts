/**
 * InfluxDB stopped for 30 s during a run: jobs fail and retry with backoff, events wait in the
 * outbox, and once InfluxDB is back every accepted value and every event is in history, once,
 * and the ingestion log holds one entry per payload however often its step was retried.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startInflux } from '../../scripts/lib/local-services.ts';
import { provisionComfort, queueIdle, startPipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { readEntry } from '../../src/ingest/ingest-log.ts';

const OUTAGE_MS = 30_000;

describe('InfluxDB outage', () => {
  it(
    'loses nothing: every accepted value and event is in history once InfluxDB is back',
    { timeout: 180_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'vigil-influx-outage-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const influxd = await startInflux({ dataDir: dir });
      onTestFinished(() => influxd.stop());
      // Retries at most a second apart, so the run goes on as soon as InfluxDB is back.
      const p = await startPipeline({
        roles: 'gateway,worker',
        influxUrl: influxd.url,
        ingestLogSize: 5000,
        jobBackoffMaxMs: 1000,
      });
      const devices = Array.from({ length: 10 }, (_, i) => `d${i}`);
      const { key } = await provisionComfort(p, 'acme', devices);
      await p.admin.setPreparser(
        'acme',
        'function parsePayload(s) { const j = JSON.parse(s); return { deviceName: j.deviceName, time: j.t, payload: j.p }; }',
        true,
      );
      const base = Date.now() - 3600_000;
      let accepted = 0;
      const send = async (from: number, to: number) => {
        for (let i = from; i < to; i++) {
          await Promise.all(
            devices.map(async (deviceName, d) => {
              const body = JSON.stringify({
                deviceName,
                t: base + i * 1000,
                p: { Temperature: 20 + ((i + d) % 15), Humidity: 40 + (i % 10) },
              });
              const res = await p.post('gateway/submit', key, body);
              await res.arrayBuffer();
              if (res.status === 202) accepted += 1;
            }),
          );
        }
      };
      await send(0, 60);
      await eventually(() => queueIdle(p), { timeoutMs: 30_000, message: 'first part processed' });
      await influxd.stop();
      const stoppedAt = Date.now();
      await send(60, 200);
      const remaining = OUTAGE_MS - (Date.now() - stoppedAt);
      if (remaining > 0) await sleep(remaining); // the rest of the outage: part of the scenario
      expect(await queueIdle(p)).toBe(false); // jobs are waiting for InfluxDB, not dropped
      await influxd.restart();

      const expectedValues = accepted * 2;
      const counted = await eventually(
        async () => {
          const [series] = await p.influx.query('SELECT count("value") FROM "readings"');
          const n = Number(series?.[0]?.values[0]?.[1] ?? 0);
          return n >= expectedValues ? n : undefined;
        },
        { timeoutMs: 90_000, message: `${expectedValues} values in InfluxDB` },
      );
      expect(accepted).toBe(2000);
      expect(counted).toBe(expectedValues);
      const redisEvents = await p.redis.zcard(p.keys.envEvents('acme'));
      expect(redisEvents).toBeGreaterThan(20);
      const influxEvents = await eventually(
        async () => {
          const [series] = await p.influx.query(
            `SELECT count("message") FROM "long"."events" WHERE "env" = 'acme'`,
          );
          const n = Number(series?.[0]?.values[0]?.[1] ?? 0);
          return n >= redisEvents ? n : undefined;
        },
        { timeoutMs: 30_000, message: 'events in InfluxDB' },
      );
      expect(influxEvents).toBe(redisEvents);
      // Steps retried through the outage log each payload once, not once per attempt.
      await eventually(() => queueIdle(p), { timeoutMs: 30_000, message: 'queue drained' });
      const logged = (await p.redis.lrange(p.keys.ingestLog('acme'), 0, -1)).map(
        (l) => readEntry(l).ingestId,
      );
      expect(new Set(logged).size).toBe(accepted);
      expect(logged).toHaveLength(accepted);
    },
  );
});
