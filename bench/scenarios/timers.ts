/**
 * Device timers (rules that wait, `for`, and stale rules): what the scheduler costs when nothing is
 * due, and how fast a crowd of deadlines falling due together is applied.
 *
 * (1) Idle tick: 100,000 devices' timers pending in the timers set, none due; the scheduler's tick
 * (one ZRANGEBYSCORE that finds nothing) timed 200 times from the bench process against the bench
 * Redis. (2) Crowd: 10,000 devices of a definition whose CRITICAL rule waits 20 s each get one value
 * that meets it, all measured at the same millisecond, through a pre-parser; once every value is
 * applied (10,000 timers pending), the deadline passes and the figure is the time from the deadline
 * until all 10,000 CRITICAL events exist (scheduler interval, ticks queued, worker steps applying
 * them). Vigil runs the gateway, worker and scheduler roles in one process.
 */
import { adminDeps, createKeys } from '../../src/keys.ts';
import { createLogger } from '../../src/log/logger.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { startDeviceTimers } from '../../src/scheduler/device-timers.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import type { BenchContext } from '../lib/context.ts';
import { sleep, startBenchVigil } from '../lib/context.ts';
import { describePerUnit, snapshot } from '../lib/cpu.ts';
import { commandStats, describeTopCommands } from '../lib/redis-stats.ts';
import { BENCH_ENV, BENCH_PARSER } from '../lib/provision.ts';
import { median, percentile } from '../lib/stats.ts';

const PENDING = 100_000;
const IDLE_TICKS = 200;
const CROWD = 10_000;
const WAIT_MS = 20_000;
const PER_SUBMISSION = 500;
const TIMEOUT_MS = 120_000;

const TIMER_SPEC: DefinitionSpec = {
  name: 'TimerSensors',
  manufacturer: 'Bench',
  version: '1',
  dataPoints: [
    {
      name: 'Temperature',
      displayName: 'Temperature',
      dataType: 'temperature',
      hysteresis: 0,
      thresholds: [
        { status: 'WARNING', above: 25 },
        { status: 'CRITICAL', above: 30, forMs: WAIT_MS },
      ],
    },
  ],
};

/** `{r: [[device, t, temperature], …]}`: one reading per element, of its own device, measured at `t`. */
const PREPARSER = `function parsePayload(s) {
  return JSON.parse(s).r.map((x) => ({ deviceName: x[0], time: x[1], payload: { t: x[2] } }));
}`;

const timerDevice = (i: number) => `timer-${i}`;

/** Median and p99 of an idle scheduler tick over 100,000 pending timers, in ms. */
async function idleTicks(ctx: BenchContext, keyPrefix: string): Promise<{ median: number; p99: number }> {
  const redis = connectRedis(ctx.redisUrl, 'command', 'bench-timers');
  const keys = createKeys(keyPrefix);
  try {
    const farMs = Date.now() + 3_600_000;
    for (let i = 0; i < PENDING; i += 10_000) {
      const args: (string | number)[] = [];
      for (let j = i; j < i + 10_000; j++) args.push(farMs + j, `${BENCH_ENV}\nidle-${j}`);
      await redis.zadd(keys.deviceTimers(), ...args);
    }
    const timers = startDeviceTimers({
      redis,
      keys,
      partitions: 8,
      log: createLogger('silent'),
      intervalMs: 1000,
      autoStart: false,
    });
    const ms: number[] = [];
    for (let i = 0; i < IDLE_TICKS; i++) {
      const t0 = performance.now();
      const queued = await timers.tick();
      ms.push(performance.now() - t0);
      if (queued !== 0) throw new Error(`timers: an idle tick queued ${queued} ticks`);
    }
    await redis.del(keys.deviceTimers());
    return { median: median(ms), p99: percentile(ms, 99) };
  } finally {
    await closeRedis(redis);
  }
}

async function crowdOnce(
  ctx: BenchContext,
  run: number,
): Promise<{ firedS: number; idle: { median: number; p99: number } }> {
  const b = await startBenchVigil(ctx, 'gateway,worker,scheduler', {}, 'timers');
  const { settings, vigil } = b;
  const keys = createKeys(settings.keyPrefix);
  const redis = connectRedis(ctx.redisUrl, 'command', 'bench-timers-crowd');
  try {
    const idle = await idleTicks(ctx, settings.keyPrefix);
    const admin = createTenancyAdmin(adminDeps(redis, keys));
    await admin.applyDefinition({ kind: 'private', env: BENCH_ENV }, TIMER_SPEC, BENCH_PARSER);
    await admin.setPreparser(BENCH_ENV, PREPARSER, true);
    for (let i = 0; i < CROWD; i++) {
      await admin.createDevice(BENCH_ENV, {
        name: timerDevice(i),
        definitionName: TIMER_SPEC.name,
        definitionIsPublic: false,
      });
    }
    const measuredMs = Date.now();
    const deadlineMs = measuredMs + WAIT_MS;
    const gateway = `http://127.0.0.1:${vigil.ports.gateway}/gateway/submit/${b.provisioned.apiKey}`;
    for (let i = 0; i < CROWD; i += PER_SUBMISSION) {
      const r = Array.from({ length: PER_SUBMISSION }, (_, j) => [timerDevice(i + j), measuredMs, 31]);
      const res = await fetch(gateway, { method: 'POST', body: JSON.stringify({ r }) });
      await res.arrayBuffer();
      if (res.status !== 202) throw new Error(`timers: upload HTTP ${res.status}`);
    }
    const envEvents = keys.envEvents(BENCH_ENV);
    // Every value applied: a WARNING event each, and every device's timer set.
    const applied = async () =>
      (await redis.zcard(envEvents)) >= CROWD && (await redis.zcard(keys.deviceTimers())) >= CROWD;
    const untilApplied = Date.now() + TIMEOUT_MS;
    while (!(await applied())) {
      if (Date.now() > untilApplied || Date.now() >= deadlineMs)
        throw new Error(`timers: the ${CROWD} values were not applied before their deadline`);
      await sleep(50);
    }
    await sleep(Math.max(0, deadlineMs - Date.now()));
    const pids = { vigil: vigil.pid, redis: ctx.pids.redis };
    const cpuBefore = snapshot(pids);
    const redisBefore = await commandStats(ctx.redisUrl);
    while ((await redis.zcard(envEvents)) < 2 * CROWD) {
      if (Date.now() > deadlineMs + TIMEOUT_MS) throw new Error('timers: the deadlines were not all applied');
      await sleep(10);
    }
    const firedS = (Date.now() - deadlineMs) / 1000;
    const cpu = describePerUnit(cpuBefore, snapshot(pids), CROWD, 'deadline');
    const redisTop = describeTopCommands(redisBefore, await commandStats(ctx.redisUrl), CROWD, 'deadline');
    ctx.report.notes.push(
      `timers run ${run + 1}: idle tick over ${PENDING} pending timers median ${idle.median.toFixed(2)} ms, p99 ${idle.p99.toFixed(2)} ms; ${CROWD} deadlines due together all applied ${firedS.toFixed(2)} s after the deadline (${cpu}; ${redisTop})`,
    );
    return { firedS, idle };
  } finally {
    await closeRedis(redis);
    await vigil.stop();
  }
}

export async function runTimers(ctx: BenchContext): Promise<void> {
  const runs: { firedS: number; idle: { median: number; p99: number } }[] = [];
  for (let r = 0; r < ctx.opts.runs; r++) runs.push(await crowdOnce(ctx, r));
  ctx.report.add({
    id: 'timers.idleTick',
    label: 'scheduler tick with 100,000 timers pending, none due (median of 200)',
    unit: 'ms',
    runs: runs.map((r) => r.idle.median),
    target: { max: 10 },
    note: `p99 per run: ${runs.map((r) => r.idle.p99.toFixed(2)).join(' / ')} ms`,
  });
  ctx.report.add({
    id: 'timers.crowd',
    label: '10,000 deadlines due together: all applied after the deadline',
    unit: 's',
    runs: runs.map((r) => r.firedS),
    target: { max: 2 },
  });
}
