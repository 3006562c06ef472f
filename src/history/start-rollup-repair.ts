/**
 * Rollup repair, run by the scheduler role: the sweeper enqueues a rollup job for each late hour
 * every `sweepIntervalMs` (late-hour-sweeper.ts), and a BullMQ worker runs the jobs
 * (rollup-repair.ts), retrying them with a doubling delay (VIGIL_JOB_BACKOFF_MS …
 * VIGIL_JOB_BACKOFF_MAX_MS) while InfluxDB is down. Any number of schedulers may run: deduplication
 * keeps one job waiting per hour, and BullMQ shares the jobs among them.
 */
import { Queue, Worker } from 'bullmq';
import { Counter, Gauge, type Registry } from 'prom-client';
import type { Config } from '../config/schema.ts';
import { cappedBackoff } from '../lib/backoff.ts';
import type { Logger } from '../log/logger.ts';
import { closeRedis, connectRedis, type Redis } from '../redis/connect.ts';
import type { HistoryKeys } from './history-keys.ts';
import type { InfluxClient } from './influx-client.ts';
import { createLateHourSweeper, type Sweep } from './late-hour-sweeper.ts';
import { createRollupProcessor, ROLLUP_QUEUE, type RollupJob, type RollupOutcome } from './rollup-repair.ts';
import { retentionMs } from './schema.ts';

/** How often the sweeper looks for late hours by default, in ms. */
export const ROLLUP_SWEEP_INTERVAL_MS = 1000;
/** Rollup jobs one process runs at once by default: InfluxDB's CPU is shared with ingestion. */
export const ROLLUP_CONCURRENCY = 4;
const BACKOFF_TYPE = 'vigil-capped';

export interface RollupRepair {
  /** Enqueues a job for every late hour not enqueued yet; returns the number of late hours. */
  sweep: Sweep;
  close(): Promise<void>;
}

export interface RollupRepairDeps {
  config: Pick<Config, 'redisUrl' | 'jobAttempts' | 'jobBackoffMs' | 'jobBackoffMaxMs' | 'rollupRetention'>;
  keys: HistoryKeys;
  influx: InfluxClient;
  log: Logger;
  metrics?: Registry;
  sweepIntervalMs?: number;
  concurrency?: number;
}

function openRollupQueue(connection: Redis, deps: RollupRepairDeps): Queue<RollupJob> {
  return new Queue<RollupJob>(ROLLUP_QUEUE, {
    connection,
    prefix: deps.keys.rollupJobsPrefix(),
    // Jobs go when they end: a failed one keeps its mark, which the sweeper enqueues again.
    defaultJobOptions: {
      attempts: deps.config.jobAttempts,
      backoff: { type: BACKOFF_TYPE },
      removeOnComplete: true,
      removeOnFail: true,
    },
  });
}

function startRollupWorker(
  connection: Redis,
  redis: Redis,
  deps: RollupRepairDeps,
  log: Logger,
): Worker<RollupJob, RollupOutcome> {
  const { config } = deps;
  const recomputed = new Counter({
    name: 'vigil_rollup_hours_recomputed_total',
    help: 'Hourly rollups recomputed because values arrived after the rollup query had passed their hour.',
    registers: deps.metrics ? [deps.metrics] : [],
  });
  const process = createRollupProcessor({
    redis,
    keys: deps.keys,
    influx: deps.influx,
    log,
    rollupRetentionMs: retentionMs(config.rollupRetention),
  });
  const worker = new Worker<RollupJob, RollupOutcome>(
    ROLLUP_QUEUE,
    async (job) => {
      const outcome = await process(job);
      if (outcome === 'recomputed') recomputed.inc();
      return outcome;
    },
    {
      connection,
      prefix: deps.keys.rollupJobsPrefix(),
      concurrency: deps.concurrency ?? ROLLUP_CONCURRENCY,
      settings: {
        backoffStrategy: (attempts) => cappedBackoff(attempts, config.jobBackoffMs, config.jobBackoffMaxMs),
      },
    },
  );
  worker.on('failed', (job, err) => {
    if (job?.attemptsMade === 1) log.warn({ err: err.message }, 'rollup job failed; retried with backoff');
  });
  // BullMQ's own failures (Redis gone, a lock lost).
  worker.on('error', (err) => log.warn({ err: err.message }, 'rollup worker'));
  return worker;
}

export function startRollupRepair(deps: RollupRepairDeps): RollupRepair {
  const log = deps.log.child({ component: 'rollup repair' });
  const redis = connectRedis(deps.config.redisUrl, 'command', 'vigil-rollups');
  const queueConnection = connectRedis(deps.config.redisUrl, 'blocking', 'vigil-rollup-queue');
  const workerConnection = connectRedis(deps.config.redisUrl, 'blocking', 'vigil-rollup-worker');
  const queue = openRollupQueue(queueConnection, deps);
  const worker = startRollupWorker(workerConnection, redis, deps, log);
  const sweep = createLateHourSweeper({ redis, keys: deps.keys, queue });
  const marked = new Gauge({
    name: 'vigil_rollup_late_hours',
    help: 'Hours of data points whose rollup waits to be recomputed, at the last sweep.',
    registers: deps.metrics ? [deps.metrics] : [],
  });
  const sweeping = repeat(
    async () => marked.set(await sweep()),
    deps.sweepIntervalMs ?? ROLLUP_SWEEP_INTERVAL_MS,
    (err) => log.warn({ err: messageOf(err) }, 'looking for late hours failed; retrying'),
  );
  let closing: Promise<void> | undefined;
  const close = async () => {
    const steps: [string, () => Promise<unknown>][] = [
      ['sweeper', () => sweeping.stop()],
      ['worker', () => worker.close()],
      ['queue', () => queue.close()],
      ['redis', () => Promise.all([redis, queueConnection, workerConnection].map(closeRedis))],
    ];
    for (const [step, run] of steps) {
      // Every step runs, whatever the one before did.
      await run().catch((err: unknown) =>
        log.warn({ err: messageOf(err), step }, 'rollup repair: failed to stop cleanly'),
      );
    }
  };
  return { sweep, close: () => (closing ??= close()) };
}

/** Runs `task` now and then `intervalMs` after each run ends, until stopped (which awaits a run). */
function repeat(task: () => Promise<void>, intervalMs: number, failed: (err: unknown) => void) {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  const run = () => {
    running = task()
      .catch(failed)
      .finally(() => {
        if (!stopped) timer = setTimeout(run, intervalMs);
      });
  };
  timer = setTimeout(run, 0);
  return {
    stop: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
