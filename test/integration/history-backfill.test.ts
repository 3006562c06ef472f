/**
 * A backfill (devices uploading what they buffered offline) reaches every reader of history: the
 * hourly rollups, Grafana's long-range panel and last24Hours agree with raw values, a second
 * identical backfill changes nothing, the rollups follow once InfluxDB is back from an outage, and
 * readings older than raw retention are refused instead of half stored.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Queue } from 'bullmq';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startInflux } from '../../scripts/lib/local-services.ts';
import { msTime } from '../../src/history/influxql.ts';
import { queryLast24Hours } from '../../src/history/last-24-hours.ts';
import { ROLLUP_QUEUE } from '../../src/history/rollup-repair.ts';
import { rollupSelect } from '../../src/history/schema.ts';
import { readEntry } from '../../src/ingest/ingest-log.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { apiCall, processed, provisionBackfill, upload, type BufferedReading } from '../support/backfill.ts';
import { eventually } from '../support/eventually.ts';
import { startPipeline, type Pipeline } from '../support/pipeline.ts';

const H = 3_600_000;
const SENSORS = ['Temperature', 'Humidity', 'Illuminance', 'Battery'] as const;

/** Hourly aggregates by `device|sensor|hour ms`: count, total, max, min, avg (rounded). */
type Hourly = Map<string, number[]>;

function hourlyOf(
  series: { tags?: Record<string, string>; columns: string[]; values: unknown[][] }[],
): Hourly {
  const out: Hourly = new Map();
  for (const s of series) {
    const at = (row: unknown[], c: string) => Number(row[s.columns.indexOf(c)]);
    for (const row of s.values) {
      if (!at(row, 'count')) continue;
      const key = `${s.tags?.device}|${s.tags?.sensor}|${at(row, 'time')}`;
      out.set(
        key,
        ['count', 'total', 'max', 'min', 'avg'].map((c) => Math.round(at(row, c) * 1e9) / 1e9),
      );
    }
  }
  return out;
}

/** The rollup query's aggregation, computed from raw values of [fromMs, toMs). */
async function fromRaw(p: Pipeline, fromMs: number, toMs: number): Promise<Hourly> {
  const where = `"env" = 'acme' AND time >= ${msTime(fromMs)} AND time < ${msTime(toMs)}`;
  const [series] = await p.influx.query(rollupSelect(p.influx.database, { where }), { method: 'POST' });
  return hourlyOf(series ?? []);
}

/** The stored hourly rollups of [fromMs, toMs). */
async function rollups(p: Pipeline, fromMs: number, toMs: number): Promise<Hourly> {
  const [series] = await p.influx.query(
    `SELECT "count", "total", "max", "min", "avg" FROM "long"."readings_hourly" WHERE "env" = 'acme' ` +
      `AND time >= ${msTime(fromMs)} AND time < ${msTime(toMs)} GROUP BY *`,
  );
  return hourlyOf(series ?? []);
}

/** Each device's readings: `perHour` per clock hour from `fromMs` until `untilMs`. */
function buffered(devices: number, fromMs: number, untilMs: number, perHour: number): BufferedReading[][] {
  return Array.from({ length: devices }, (_, d) => {
    const out: BufferedReading[] = [];
    for (let t = fromMs + 60_000; t < untilMs; t += H / perHour) {
      const i = out.length;
      out.push({
        t,
        p: {
          Temperature: 15 + ((d * 7 + i) % 13) + 0.25,
          Humidity: 30 + ((d + i * 3) % 40),
          Illuminance: (d * 31 + i * 17) % 900,
          Battery: 2900 + ((d + i) % 300),
        },
      });
    }
    return out;
  });
}

/**
 * Waits until every late hour's rollup job ran: no hour marked, no job waiting or running. A day of
 * late hours is a few seconds of jobs on an idle machine and minutes on a loaded one: the bound
 * ends a run that has stopped, it does not time the work.
 */
async function rollupsSettled(p: Pipeline, timeoutMs = 240_000): Promise<void> {
  const connection = connectRedis(p.config.redisUrl, 'blocking', 'test-rollups');
  onTestFinished(() => closeRedis(connection));
  const queue = new Queue(ROLLUP_QUEUE, { connection, prefix: p.keys.rollupJobsPrefix() });
  onTestFinished(() => queue.close());
  await eventually(
    async () =>
      (await p.redis.hlen(p.keys.lateHours())) +
      Object.values(await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized')).reduce(
        (a, b) => a + b,
        0,
      ),
    { until: (n) => n === 0, timeoutMs, intervalMs: 100, message: 'every late hour recomputed' },
  );
}

/** The device-detail dashboard's long-range panel query (hourly rollups). */
function grafanaRollupQuery(): string {
  const file = join(import.meta.dirname, '../../grafana/dashboards/vigil-device-detail.json');
  const query = /"query": "(SELECT[^"\\]*(?:\\.[^"\\]*)*readings_hourly[^"\\]*(?:\\.[^"\\]*)*)"/.exec(
    readFileSync(file, 'utf8'),
  )?.[1];
  if (!query) throw new Error('no rollup panel in the device-detail dashboard');
  return JSON.parse(`"${query}"`) as string;
}

/** Whether two hourly maps hold the same hours with the same aggregates. */
const sameHours = (a: Hourly, b: Hourly) =>
  a.size === b.size &&
  [...a].every(([k, v]) => b.get(k)?.every((x, i) => Math.abs(x - (v[i] ?? NaN)) < 1e-6));

describe('backfill', () => {
  it(
    'folds 24 hours of 100 data points into the rollups, agreeing with raw values, last24Hours and Grafana',
    { timeout: 600_000 },
    async () => {
      // The continuous query runs every second here, so the last two hours are rolled up by it
      // and the older ones by rollup jobs alone.
      const p = await startPipeline({ roles: 'gateway,worker,scheduler,api', rollupResampleEvery: '1s' });
      const devices = Array.from({ length: 25 }, (_, i) => `d${i}`);
      const { key, token } = await provisionBackfill(p, 'acme', devices);
      const now = Date.now();
      const end = Math.floor(now / H) * H + H;
      const from = end - 24 * H;
      const readings = buffered(devices.length, from, now - 1000, 3);
      const backfill = async () => {
        await Promise.all(devices.map((d, i) => upload(p, key, d, readings[i]!)));
        await processed(p);
        await rollupsSettled(p);
      };

      await backfill();
      const raw = await fromRaw(p, from, end);
      expect(raw.size).toBeGreaterThanOrEqual(100 * 23);
      const rolled = await eventually(() => rollups(p, from, end), {
        until: (r) => sameHours(r, raw),
        timeoutMs: 20_000,
        message: 'rollups equal to the aggregation of raw values',
      }).catch(async () => rollups(p, from, end));
      expect(rolled).toEqual(raw);

      // The same upload again: the same points, the same rollups.
      await backfill();
      expect(await fromRaw(p, from, end)).toEqual(raw);
      expect(await rollups(p, from, end)).toEqual(rolled);

      const items = devices.flatMap((deviceName) =>
        SENSORS.map((sensorName) => ({ deviceName, sensorName })),
      );
      const shown = (await apiCall(p.apiUrl, token, '/sensors/batchDetails', { sensors: items })) as {
        deviceName: string;
        sensors: { sensorName: string; last24Hours: { sUTC: number; count: number; total: number }[] }[];
      }[];
      const expected = await queryLast24Hours(
        p.influx,
        'acme',
        items.map((i) => ({ device: i.deviceName, sensor: i.sensorName })),
        Date.now(),
      );
      for (const d of shown)
        for (const s of d.sensors) {
          const want = expected.get(`${d.deviceName}|${s.sensorName}`) ?? [];
          expect(s.last24Hours.map((b) => [b.sUTC, b.count])).toEqual(want.map((b) => [b.sUTC, b.count]));
          s.last24Hours.forEach((b, i) => expect(b.total).toBeCloseTo(want[i]?.total ?? NaN, 6));
        }

      // Grafana's long-range panel: avg = Σtotal / Σcount, max and min, per hour.
      const panel = grafanaRollupQuery();
      for (const device of ['d0', 'd13', 'd24'])
        for (const sensor of SENSORS) {
          const q = panel
            .replaceAll('$timeFilter', `time >= ${msTime(from)} AND time < ${msTime(end)}`)
            .replaceAll('$__interval', '1h')
            .replaceAll('$env', 'acme')
            .replaceAll('$device', device)
            .replaceAll('$sensor', sensor);
          const [series] = await p.influx.query(q, { method: 'POST' });
          const s = series?.[0];
          const rows = (s?.values ?? []).map((row) =>
            ['time', 'avg', 'max', 'min'].map((c) => Number(row[s?.columns.indexOf(c) ?? -1])),
          );
          const want = [...raw]
            .filter(([k]) => k.startsWith(`${device}|${sensor}|`))
            .map(([k, [, , max, min, avg]]) => [Number(k.split('|')[2]), avg, max, min]);
          expect(rows.map((r) => r[0])).toEqual(want.map((r) => r[0]));
          rows.forEach((r, i) => r.forEach((x, j) => expect(x).toBeCloseTo(want[i]?.[j] ?? NaN, 6)));
        }
    },
  );

  it(
    'recomputes the rollups once InfluxDB is back from an outage during the jobs',
    { timeout: 180_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'vigil-rollup-outage-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const influxd = await startInflux({ dataDir: dir });
      onTestFinished(() => influxd.stop());
      // Without the scheduler role: the backfill is processed and its hours marked, no job runs yet.
      const p = await startPipeline({
        roles: 'gateway,worker',
        influxUrl: influxd.url,
        jobBackoffMs: 200,
        jobBackoffMaxMs: 1000,
      });
      const { key } = await provisionBackfill(p, 'acme', ['d0', 'd1']);
      const end = Math.floor(Date.now() / H) * H - 3 * H;
      const from = end - 7 * H;
      const readings = buffered(2, from, end, 4);
      await Promise.all(['d0', 'd1'].map((d, i) => upload(p, key, d, readings[i]!)));
      await processed(p);
      expect(await p.redis.hlen(p.keys.lateHours())).toBe(2 * 4 * 7);

      await influxd.stop();
      const scheduler = await startVigil({ ...p.config, roles: ['scheduler'] }, createLogger('silent'));
      onTestFinished(() => scheduler.close());
      const connection = connectRedis(p.config.redisUrl, 'blocking', 'test-rollups');
      onTestFinished(() => closeRedis(connection));
      const queue = new Queue(ROLLUP_QUEUE, { connection, prefix: p.keys.rollupJobsPrefix() });
      onTestFinished(() => queue.close());
      // The jobs fail while InfluxDB is down and wait for their retries; every hour stays marked.
      await eventually(async () => (await queue.getJobCounts('delayed')).delayed ?? 0, {
        until: (n) => n > 0,
        timeoutMs: 30_000,
        message: 'rollup jobs waiting for a retry',
      });
      expect(await p.redis.hlen(p.keys.lateHours())).toBe(2 * 4 * 7);

      await influxd.restart();
      await rollupsSettled(p, 60_000);
      const raw = await fromRaw(p, from, end);
      expect(raw.size).toBe(2 * 4 * 7);
      expect(await rollups(p, from, end)).toEqual(raw);
    },
  );

  it('refuses readings older than raw retention with their own code, and keeps the rest of the upload', async () => {
    const p = await startPipeline({ roles: 'gateway,worker', rawRetention: '1h' });
    const { key } = await provisionBackfill(p, 'acme', ['d1']);
    const now = Date.now();
    await upload(p, key, 'd1', [
      { t: now - 2 * H, p: { Temperature: 10 } },
      { t: now - 1000, p: { Temperature: 20 } },
    ]);
    await processed(p, 15_000);
    const [entry] = (await p.redis.lrange(p.keys.ingestLog('acme'), 0, -1)).map(readEntry);
    expect(entry).toMatchObject({ outcome: 'partial', code: 'TIMESTAMP_BEYOND_RETENTION' });
    const [series] = await p.influx.query(`SELECT "value" FROM "raw"."readings" WHERE "env" = 'acme'`);
    expect(series?.[0]?.values.map((row) => row[1])).toEqual([20]);
  });
});
