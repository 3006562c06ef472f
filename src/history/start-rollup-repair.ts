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
import { createLifecycle } from '../lib/lifecycle.ts';
import { startPeriodic } from '../lib/periodic.ts';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { Connections } from '../redis/connections.ts';
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
  config: Pick<Config, 'jobAttempts' | 'jobBackoffMs' | 'jobBackoffMaxMs' | 'rollupRetention'>;
  /** Where its connections come from: commands, the queue's and the worker's. */
  connections: Connections;
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
    if (job?.attemptsMade === 1) log.warn({ err }, 'rollup job failed; retried with backoff');
  });
  // BullMQ's own failures (Redis gone, a lock lost).
  worker.on('error', (err) => log.warn({ err }, 'rollup worker'));
  return worker;
}

export function startRollupRepair(deps: RollupRepairDeps): RollupRepair {
  const log = deps.log.child({ component: 'rollup repair' });
  const { connections } = deps;
  // Stopped last registered first: the sweeper, the worker, the queue.
  const lifecycle = createLifecycle({ log });
  const redis = connections.command('vigil-rollups');
  const queue = openRollupQueue(connections.blocking('vigil-rollup-queue'), deps);
  lifecycle.add('queue', () => queue.close());
  const worker = startRollupWorker(connections.blocking('vigil-rollup-worker'), redis, deps, log);
  lifecycle.add('worker', () => worker.close());
  const sweep = createLateHourSweeper({ redis, keys: deps.keys, queue });
  const marked = new Gauge({
    name: 'vigil_rollup_late_hours',
    help: 'Hours of data points whose rollup waits to be recomputed, at the last sweep.',
    registers: deps.metrics ? [deps.metrics] : [],
  });
  const sweeping = startPeriodic({
    intervalMs: deps.sweepIntervalMs ?? ROLLUP_SWEEP_INTERVAL_MS,
    firstRunAfterMs: 0,
    run: async () => marked.set(await sweep()),
    onError: (err) => log.warn({ err }, 'looking for late hours failed; retrying'),
  });
  lifecycle.add('sweeper', () => sweeping.close());
  return { sweep, close: lifecycle.close };
}
