/**
 * The worker role: holds leases on ingest queue partitions (partition-leases.ts) and runs
 * VIGIL_WORKER_CONCURRENCY step loops (step-loop.ts), each on its own share of the partitions, so
 * that one step's waiting on InfluxDB overlaps another's parsing. A step takes everything waiting in
 * its partitions, up to VIGIL_WORKER_BATCH_MAX_PAYLOADS payloads: it grows with the load by itself —
 * one payload when traffic is light, thousands during a backlog — and its fixed cost (one state
 * pipeline, one history write, the queue round trips) is shared by all of them.
 */
import type { Registry } from 'prom-client';
import type { Config } from '../config/schema.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import { createWakeableSleep } from '../lib/wakeable-sleep.ts';
import type { Logger } from '../log/logger.ts';
import { ensureGroups } from '../queue/ingest-queue.ts';
import { createPartitionLeases } from '../queue/partition-leases.ts';
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { RedisCommand } from '../redis/command.ts';
import type { Connections } from '../redis/connections.ts';
import type { ProcessItems } from './ingest-processor.ts';
import { createCrashGate } from './crash-gate.ts';
import { assignPartitions } from './partition-assignment.ts';
import { runStepLoop, type StepLoopDeps } from './step-loop.ts';
import { createStepQueue } from './step-queue.ts';
import { createWorkerMetrics } from './worker-metrics.ts';

export interface RunningWorker {
  close(): Promise<void>;
}

export interface WorkerDeps {
  config: StepLoopDeps['config'] & Pick<Config, 'queuePartitions' | 'partitionLeaseMs' | 'workerConcurrency'>;
  /** Where the worker's connections come from: its control connection and one reader per loop. */
  connections: Connections;
  keys: QueueKeys;
  log: Logger;
  metrics: Registry;
  process: ProcessItems;
  /** The ingestion-log commands of items moved to the dead-letter stream. */
  deadLetterLog?: (items: IngestItem[], reason: string) => RedisCommand[];
}

export async function startWorker(deps: WorkerDeps): Promise<RunningWorker> {
  const { config, connections, keys, log } = deps;
  const metrics = createWorkerMetrics(deps.metrics);
  const control = connections.blocking('vigil-worker');
  await ensureGroups(control, keys, config.queuePartitions);
  const leases = createPartitionLeases({
    redis: control,
    keys,
    partitions: config.queuePartitions,
    leaseMs: config.partitionLeaseMs,
    log,
  });
  await leases.tick();
  const readers = Array.from({ length: config.workerConcurrency }, (_, i) =>
    connections.blocking(`vigil-worker-${i}`),
  );
  // Reconnections of the worker's connections: across one, a read's reply or an acknowledgement
  // can be lost (the connection dropped with it unanswered, or Redis restarted from an AOF that had
  // not synced it), leaving entries pending with no step holding them; each loop then reads its
  // partitions' pending entries first.
  let reconnections = 0;
  for (const [i, redis] of [control, ...readers].entries()) {
    let first = i > 0;
    redis.on('ready', () => {
      if (first) first = false;
      else reconnections++;
    });
  }
  const assignment = assignPartitions(leases, config.workerConcurrency, metrics);
  let closing = false;
  const sleeps = createWakeableSleep();
  const gate = createCrashGate();
  const loops = readers.map((reader, index) =>
    runStepLoop({
      config,
      keys,
      queue: createStepQueue({ reader, control, keys, partitions: config.queuePartitions }),
      leases,
      partitions: () => assignment(index),
      reconnections: () => reconnections,
      process: deps.process,
      gate,
      deadLetterLog: deps.deadLetterLog ?? (() => []),
      metrics,
      log,
      isClosing: () => closing,
      pause: sleeps.sleep,
    }).catch((err: unknown) => {
      log.error({ err }, 'worker step loop crashed');
    }),
  );
  let closed: Promise<void> | undefined;
  return {
    close: () =>
      (closed ??= (async () => {
        closing = true;
        sleeps.wakeAll();
        await Promise.allSettled(loops);
        // Its connections are the factory's: closed with the others, after every part stopped.
        await leases.close();
      })()),
  };
}
