/**
 * The worker role: one BullMQ worker per ingest queue partition, each partition limited to one
 * active job across ALL worker processes (global concurrency 1), so a partition's jobs are applied
 * in acceptance order while different partitions run in parallel. A job whose worker died stalls
 * and is put back at the head of its partition after `stalledIntervalMs`, so order survives a
 * crash; infrastructure failures retry with exponential backoff.
 */
import { Queue, Worker, type Job } from 'bullmq';
import type { Registry } from 'prom-client';
import { Counter, Histogram } from 'prom-client';
import type { Config } from '../config/schema.ts';
import type { Logger } from '../log/logger.ts';
import { ingestQueueNames, type IngestJobData } from '../queue/jobs.ts';
import { cappedBackoff } from '../queue/ingest-producer.ts';
import { connectRedis, closeRedis } from '../redis/connect.ts';
import type { Keys } from '../state/keys.ts';
import type { ProcessResult } from './ingest-processor.ts';

export interface RunningWorker {
  close(): Promise<void>;
}

export async function startWorker(deps: {
  config: Config;
  keys: Keys;
  log: Logger;
  metrics: Registry;
  process: (items: IngestJobData['items']) => Promise<ProcessResult>;
}): Promise<RunningWorker> {
  const { config, log } = deps;
  const connection = connectRedis(config.redisUrl, 'blocking', 'vigil-worker');
  const jobs = new Counter({
    name: 'vigil_worker_jobs_total',
    help: 'Jobs processed, by result.',
    labelNames: ['result'],
    registers: [deps.metrics],
  });
  const payloads = new Counter({
    name: 'vigil_worker_payloads_total',
    help: 'Payloads processed.',
    registers: [deps.metrics],
  });
  const values = new Counter({
    name: 'vigil_worker_values_total',
    help: 'Data point values stored.',
    registers: [deps.metrics],
  });
  const duration = new Histogram({
    name: 'vigil_worker_job_seconds',
    help: 'Processing time per job.',
    buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [deps.metrics],
  });
  const processor = async (job: Job<IngestJobData>) => {
    const end = duration.startTimer();
    const result = await deps.process(job.data.items);
    end();
    payloads.inc(result.payloads);
    values.inc(result.values);
    return result;
  };
  const names = ingestQueueNames(config);
  // Global concurrency is a property of the queue in Redis; setting it again is harmless.
  await Promise.all(
    names.map(async (name) => {
      const queue = new Queue(name, { connection, prefix: deps.keys.queuePrefix() });
      await queue.setGlobalConcurrency(1);
      await queue.close();
    }),
  );
  const workers = names.map((name) => {
    const worker = new Worker<IngestJobData>(name, processor, {
      connection,
      prefix: deps.keys.queuePrefix(),
      concurrency: 1,
      stalledInterval: config.stalledIntervalMs,
      lockDuration: Math.max(config.stalledIntervalMs, 5000),
      // A job is lost to a crash loop only if it stalls this often; infrastructure faults are
      // retried through attempts/backoff instead.
      maxStalledCount: 100,
      settings: {
        backoffStrategy: (attemptsMade: number) =>
          cappedBackoff(attemptsMade, config.jobBackoffMs, config.jobBackoffMaxMs),
      },
    });
    worker.on('completed', () => jobs.inc({ result: 'completed' }));
    worker.on('failed', (job, err) => {
      jobs.inc({ result: 'failed' });
      log.warn(
        { queue: name, jobId: job?.id, attempt: job?.attemptsMade, err: err.message },
        'job failed; it will be retried',
      );
    });
    worker.on('error', (err) => log.error({ queue: name, err: err.message }, 'worker error'));
    return worker;
  });
  await Promise.all(workers.map((w) => w.waitUntilReady()));
  let closing: Promise<void> | undefined;
  return {
    close: () =>
      (closing ??= (async () => {
        await Promise.allSettled(workers.map((w) => w.close()));
        await closeRedis(connection);
      })()),
  };
}
