/**
 * Backfill: devices upload what they buffered while offline. `backfillValues` values (default
 * 1,000,000) of 100 data points (25 devices × 4), measured over the 24 hours that ended an hour
 * before the current one, go through the HTTP gateway in submissions of up to 500 readings that
 * a pre-parser splits, to one Vigil with the gateway, worker and scheduler roles. Every one of
 * those hours is older than the rollup query's window, so rollup jobs alone fold them in. The
 * figure is the time from the moment the last value is processed until no hour waits for its
 * rollup; the note gives the processing rate and whether every hourly rollup then equals the
 * aggregation of the raw values.
 */
import { Queue } from 'bullmq';
import { createInfluxClient, type InfluxClient } from '../../src/history/influx-client.ts';
import { msTime } from '../../src/history/influxql.ts';
import { hourStartMs } from '../../src/history/last-24-hours.ts';
import { ROLLUP_QUEUE } from '../../src/history/rollup-repair.ts';
import { rollupSelect } from '../../src/history/schema.ts';
import { adminDeps, createKeys, type Keys } from '../../src/keys.ts';
import { closeRedis, connectRedis, type Redis } from '../../src/redis/connect.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import type { BenchContext } from '../lib/context.ts';
import { sleep, startBenchVigil } from '../lib/context.ts';
import { describePerUnit, snapshot } from '../lib/cpu.ts';
import { BENCH_ENV, DATA_POINTS_PER_PAYLOAD, deviceName } from '../lib/provision.ts';
import type { VigilProcess } from '../lib/vigil-process.ts';

const H = 3_600_000;
/** 25 devices of the bench definition's 4 data points: 100 data points. */
const DEVICES = 25;
/** Readings per submission: about 20 KB of body, as a device uploading its buffer in parts. */
const READINGS_PER_SUBMISSION = 500;
const UPLOADS_IN_FLIGHT = 4;
const TIMEOUT_MS = 900_000;

/** Each reading `[t, temperature, humidity, co2, battery]` becomes one payload measured at `t`. */
const PREPARSER = `function parsePayload(s) {
  const j = JSON.parse(s);
  return j.r.map((x) => ({ deviceName: j.d, time: x[0], payload: { t: x[1], h: x[2], c: x[3], b: x[4] } }));
}`;

interface Submission {
  device: string;
  body: string;
}

/** The submissions of `readingsPerDevice` readings per device, evenly over [fromMs, toMs). */
function* submissions(readingsPerDevice: number, fromMs: number, toMs: number): Generator<Submission> {
  const stepMs = (toMs - fromMs) / readingsPerDevice;
  for (let start = 0; start < readingsPerDevice; start += READINGS_PER_SUBMISSION) {
    for (let d = 0; d < DEVICES; d++) {
      const readings: number[][] = [];
      for (let i = start; i < Math.min(start + READINGS_PER_SUBMISSION, readingsPerDevice); i++) {
        const t = fromMs + Math.floor(i * stepMs);
        readings.push([t, 20 + ((d * 7 + i) % 100) / 10, 40 + (i % 20), 600 + (i % 50), 3000 - (i % 7)]);
      }
      yield { device: deviceName(d), body: JSON.stringify({ d: deviceName(d), r: readings }) };
    }
  }
}

async function upload(gatewayUrl: string, apiKey: string, all: Iterable<Submission>): Promise<void> {
  const it = all[Symbol.iterator]();
  const sender = async () => {
    for (let next = it.next(); !next.done; next = it.next()) {
      const res = await fetch(`${gatewayUrl}/gateway/submit/${apiKey}`, {
        method: 'POST',
        body: next.value.body,
        headers: { 'content-type': 'application/json' },
      });
      await res.arrayBuffer();
      if (res.status !== 202) throw new Error(`backfill upload of ${next.value.device}: HTTP ${res.status}`);
    }
  };
  await Promise.all(Array.from({ length: UPLOADS_IN_FLIGHT }, sender));
}

/** Polls `done` every 100 ms until it is true; false when `timeoutMs` passed first. */
async function waitFor(done: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await done()) return true;
    await sleep(100);
  }
  return false;
}

/** Whether no hour is marked late and no rollup job waits, runs or waits for a retry. */
async function rollupsSettled(redis: Redis, keys: Keys, queue: Queue): Promise<boolean> {
  if ((await redis.hlen(keys.lateHours())) > 0) return false;
  const counts = await queue.getJobCounts('waiting', 'active', 'delayed', 'prioritized');
  return Object.values(counts).every((n) => n === 0);
}

/** Hours of [fromMs, toMs) whose rollup differs from the aggregation of raw values, and the total. */
async function disagreeingHours(influx: InfluxClient, fromMs: number, toMs: number) {
  const where = `"env" = '${BENCH_ENV}' AND time >= ${msTime(fromMs)} AND time < ${msTime(toMs)}`;
  const fields = ['count', 'total', 'max', 'min', 'avg'];
  const byHour = async (q: string) => {
    const [series] = await influx.query(q, { method: 'POST' });
    const out = new Map<string, number[]>();
    for (const s of series ?? [])
      for (const row of s.values) {
        const at = (c: string) => Number(row[s.columns.indexOf(c)]);
        if (at('count') > 0) out.set(`${s.tags?.device}|${s.tags?.sensor}|${at('time')}`, fields.map(at));
      }
    return out;
  };
  const raw = await byHour(rollupSelect(influx.database, { where }));
  const rolled = await byHour(
    `SELECT ${fields.map((f) => `"${f}"`).join(', ')} FROM "long"."readings_hourly" WHERE ${where} GROUP BY *`,
  );
  let differ = Math.abs(raw.size - rolled.size);
  for (const [hour, want] of raw) {
    const got = rolled.get(hour);
    if (!got || want.some((x, i) => Math.abs(x - (got[i] ?? NaN)) > 1e-6 * Math.max(1, Math.abs(x))))
      differ++;
  }
  return { differ, hours: raw.size };
}

async function values(vigil: VigilProcess): Promise<number> {
  return (await vigil.metrics()).get('vigil_worker_values_total') ?? 0;
}

async function backfillOnce(ctx: BenchContext, run: number): Promise<number> {
  const b = await startBenchVigil(ctx, 'gateway,worker,scheduler', {}, 'backfill');
  const { settings, vigil } = b;
  const keys = createKeys(settings.keyPrefix);
  const redis = connectRedis(ctx.redisUrl, 'command', 'bench-backfill');
  const queueConnection = connectRedis(ctx.redisUrl, 'blocking', 'bench-backfill-queue');
  const queue = new Queue(ROLLUP_QUEUE, { connection: queueConnection, prefix: keys.rollupJobsPrefix() });
  const influx = createInfluxClient({ url: ctx.influxUrl, database: settings.influxDatabase });
  try {
    await createTenancyAdmin(adminDeps(redis, keys)).setPreparser(BENCH_ENV, PREPARSER, true);
    const readingsPerDevice = Math.ceil(ctx.opts.backfillValues / DATA_POINTS_PER_PAYLOAD / DEVICES);
    const total = readingsPerDevice * DEVICES * DATA_POINTS_PER_PAYLOAD;
    const toMs = hourStartMs(Date.now()) - H;
    const fromMs = toMs - 24 * H;
    const started = Date.now();
    const gatewayUrl = `http://127.0.0.1:${vigil.ports.gateway}`;
    await upload(gatewayUrl, b.provisioned.apiKey, submissions(readingsPerDevice, fromMs, toMs));
    const uploadedS = (Date.now() - started) / 1000;
    if (!(await waitFor(async () => (await values(vigil)) >= total, TIMEOUT_MS)))
      throw new Error(`backfill: only ${await values(vigil)} of ${total} values processed`);
    const processedMs = Date.now();
    const pids = { vigil: vigil.pid, redis: ctx.pids.redis, influx: ctx.pids.influx };
    const cpuBefore = snapshot(pids);
    const recomputedBefore = (await vigil.metrics()).get('vigil_rollup_hours_recomputed_total') ?? 0;
    if (!(await waitFor(() => rollupsSettled(redis, keys, queue), TIMEOUT_MS)))
      throw new Error(`backfill: rollups not caught up ${TIMEOUT_MS / 1000} s after the last value`);
    const foldedS = (Date.now() - processedMs) / 1000;
    const recomputed =
      ((await vigil.metrics()).get('vigil_rollup_hours_recomputed_total') ?? 0) - recomputedBefore;
    const cpu = describePerUnit(
      cpuBefore,
      snapshot(pids),
      Math.max(1, recomputed),
      'hour recomputed after the last value',
    );
    const { differ, hours } = await disagreeingHours(influx, fromMs, toMs);
    const processS = (processedMs - started) / 1000;
    ctx.report.notes.push(
      `backfill run ${run + 1}: ${total} values uploaded in ${uploadedS.toFixed(1)} s, processed in ${processS.toFixed(1)} s (${Math.round(total / processS)} values/s); rollups caught up ${foldedS.toFixed(1)} s later (${recomputed} hours recomputed after the last value; ${cpu}); ${differ} of ${hours} hourly rollups differ from raw values`,
    );
    if (differ > 0) throw new Error(`backfill: ${differ} of ${hours} hourly rollups differ from raw values`);
    return foldedS;
  } finally {
    await queue.close();
    await Promise.all([closeRedis(redis), closeRedis(queueConnection)]);
    await vigil.stop();
  }
}

export async function runBackfill(ctx: BenchContext): Promise<void> {
  const runs: number[] = [];
  for (let r = 0; r < ctx.opts.runs; r++) runs.push(await backfillOnce(ctx, r));
  ctx.report.add({
    id: 'backfill.folded',
    label: 'backfill: rollups caught up after the last value processed',
    unit: 's',
    runs,
    target: { max: 60 },
    note: `${ctx.opts.backfillValues} values over 24 hours for 100 data points, in submissions of ${READINGS_PER_SUBMISSION} readings split by a pre-parser`,
  });
}
