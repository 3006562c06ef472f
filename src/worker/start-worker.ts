/**
 * The worker role: takes the ingest queue partitions it holds a lease on (partition-leases.ts) and
 * processes everything waiting in them, as one step, up to VIGIL_WORKER_BATCH_MAX_PAYLOADS
 * payloads. So a step grows with the load by itself — one payload when traffic is light, thousands
 * during a backlog — and its fixed cost (one state pipeline, one history write, the queue round
 * trips) is shared by all of them. VIGIL_WORKER_CONCURRENCY steps run at once, each on its own
 * partitions, so one step's waiting on InfluxDB overlaps another's parsing.
 *
 * Order: a partition is read by one step at a time, in queue order, and a step's payloads keep that
 * order; so each device's payloads reach the state step in acceptance order.
 *
 * Failures: processing is idempotent, so a failed step leaves its entries pending and retries them
 * after a doubling delay (VIGIL_JOB_BACKOFF_MS … _MAX_MS), per partition. A partition that failed
 * three times in a row is retried one entry at a time, so a bad entry holds up its own partition
 * only; an entry that failed VIGIL_JOB_ATTEMPTS times moves to the dead-letter stream (kept). A
 * worker that dies leaves its entries pending; whoever takes its partitions over reads them first.
 */
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { ChainableCommander } from 'ioredis';
import type { Registry } from 'prom-client';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { Config } from '../config/schema.ts';
import type { Logger } from '../log/logger.ts';
import { cappedBackoff } from '../lib/backoff.ts';
import { ackEntries, deadLetter, ensureGroups, readEntries, type QueueEntry } from '../queue/ingest-queue.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import { createPartitionLeases } from '../queue/partition-leases.ts';
import { createWakeableSleep } from '../lib/wakeable-sleep.ts';
import { connectRedis, closeRedis, type Redis } from '../redis/connect.ts';
import type { ProcessResult } from './ingest-processor.ts';
import { acknowledgementWith } from './payload-dead-letters.ts';

export interface RunningWorker {
  close(): Promise<void>;
}

/** Consecutive failed steps after which a partition is retried one entry at a time. */
const ISOLATE_AFTER = 3;
/**
 * Steps of one loop whose history is still being written while the loop processes the next. A
 * slow InfluxDB write then holds up history only, not state: at 7,875 payloads/s the lag p99 was
 * 236–403 ms with 8, 584–2,934 ms with 2 (same minutes). Memory stays bounded: at most this many
 * steps of VIGIL_WORKER_BATCH_MAX_PAYLOADS per loop.
 */
const MAX_FINISHING = 8;
/** Longest a read waits for new entries before the step loop looks at its partitions again. */
const BLOCK_MS = 250;

/** A queue entry without its payloads: what acknowledging it or counting its failures needs. */
type EntryRef = Pick<QueueEntry, 'partition' | 'id' | 'payloadsByEnv'>;

interface PartitionFailure {
  count: number;
  retryAtMs: number;
}

export async function startWorker(deps: {
  config: Config;
  keys: QueueKeys;
  log: Logger;
  metrics: Registry;
  process: (items: IngestItem[]) => Promise<ProcessResult>;
  /** Commands to run with the move of these items to the dead-letter stream (their ingestion log). */
  deadLettered?: (items: IngestItem[]) => (multi: ChainableCommander) => void;
}): Promise<RunningWorker> {
  const { config, keys, log } = deps;
  const partitions = config.queuePartitions;
  const metrics = workerMetrics(deps.metrics);
  const control = connectRedis(config.redisUrl, 'blocking', 'vigil-worker');
  await ensureGroups(control, keys, partitions);
  // Reconnections of the worker's connections. Across one, a read's reply or an acknowledgement
  // can be lost (the connection dropped with it unanswered, or Redis restarted from an AOF that had
  // not synced it): its entries then sit pending with nobody's step holding them. Each loop reads
  // its partitions' pending entries first after any reconnection, so none stays behind.
  let reconnections = 0;
  const countReconnections = (redis: Redis, connected: boolean) => {
    let first = !connected;
    redis.on('ready', () => {
      if (first) first = false;
      else reconnections++;
    });
  };
  countReconnections(control, true);
  const leases = createPartitionLeases({
    redis: control,
    keys,
    partitions,
    leaseMs: config.partitionLeaseMs,
    log,
  });
  await leases.tick();

  // Each owned partition belongs to one step loop until it is handed back or lost.
  const loopOf = new Map<number, number>();
  const assigned = Array.from({ length: config.workerConcurrency }, () => new Set<number>());
  const syncAssignments = () => {
    const owned = new Set(leases.owned());
    for (const [p, loop] of loopOf) {
      if (!owned.has(p)) {
        loopOf.delete(p);
        assigned[loop]!.delete(p);
      }
    }
    for (const p of owned) {
      if (loopOf.has(p)) continue;
      let best = 0;
      assigned.forEach((set, i) => {
        if (set.size < assigned[best]!.size) best = i;
      });
      loopOf.set(p, best);
      assigned[best]!.add(p);
      newlyAssigned[best]!.push(p);
    }
    metrics.partitions.set(owned.size);
  };
  const newlyAssigned = assigned.map(() => [] as number[]);

  let closing = false;
  const sleeps = createWakeableSleep();
  const pause = sleeps.sleep;

  const runLoop = async (index: number, reader: Redis): Promise<void> => {
    const recovering = new Set<number>();
    const failures = new Map<number, PartitionFailure>();
    const attempts = new Map<string, number>();
    // Payloads per entry, assumed the largest possible until measured (a step stays within its cap).
    let averageEntry = config.batchMaxPayloads;
    let lastStepMs = 0;
    /** The last read filled a partition's count: a backlog, which no wait would make steps larger. */
    let backlog = false;
    let reconnectionsSeen = reconnections;

    const failed = (entries: readonly EntryRef[], err: unknown) => {
      const message = err instanceof Error ? err.message : String(err);
      const now = Date.now();
      for (const p of new Set(entries.map((e) => e.partition))) {
        const count = (failures.get(p)?.count ?? 0) + 1;
        failures.set(p, {
          count,
          retryAtMs: now + cappedBackoff(count, config.jobBackoffMs, config.jobBackoffMaxMs),
        });
        recovering.add(p);
      }
      for (const e of entries) attempts.set(e.id, (attempts.get(e.id) ?? 0) + 1);
      metrics.steps.inc({ result: 'failed' });
      log.warn(
        { partitions: [...new Set(entries.map((e) => e.partition))], entries: entries.length, err: message },
        'processing step failed; its entries stay queued and are retried',
      );
    };

    /**
     * Processes entries up to their state; resolves with the rest (history, then the
     * acknowledgement with the ingestion log), which runs while the loop starts its next step.
     */
    const processEntries = async (
      entries: QueueEntry[],
      isolated: boolean,
    ): Promise<{ finished: Promise<void>; refs: EntryRef[] }> => {
      const items = entries.flatMap((e) => e.items);
      const end = metrics.duration.startTimer();
      const result = items.length > 0 ? await deps.process(items) : undefined;
      // What the acknowledgement needs, without the payloads: they would stay alive (and be copied
      // by V8's young-generation collections) for as long as the step's history takes.
      const refs = entries.map(({ partition, id, payloadsByEnv }) => ({ partition, id, payloadsByEnv }));
      // Payloads that failed on their own data leave with the acknowledgement, for the dead letters.
      const along = acknowledgementWith(keys, entries, result?.acknowledgeWith, result?.failed);
      const finished = (async () => {
        await result?.written;
        await ackEntries(control, keys, refs, along);
        end();
        metrics.steps.inc({ result: 'completed' });
        if (result) {
          metrics.payloads.inc(result.payloads);
          metrics.values.inc(result.values);
          if (result.failed) metrics.payloadFailures.inc(result.failed.length);
        }
        for (const e of refs) {
          attempts.delete(e.id);
          // An isolated partition stays isolated until none of its failed entries is left pending.
          if (isolated) failures.set(e.partition, { count: ISOLATE_AFTER, retryAtMs: 0 });
          else failures.delete(e.partition);
        }
      })();
      return { finished, refs };
    };
    // Steps whose history is still being written: at most MAX_FINISHING beside the one in process.
    const finishing = new Set<Promise<void>>();
    const track = (entries: readonly EntryRef[], done: Promise<void>) => {
      const tracked: Promise<void> = done
        .catch((err: unknown) => failed(entries, err))
        .finally(() => finishing.delete(tracked));
      finishing.add(tracked);
    };

    while (!closing) {
      while (finishing.size > 0 && (finishing.size >= MAX_FINISHING || recovering.size > 0)) {
        // A pending read must not see entries of a step that may still succeed.
        await Promise.race(finishing);
      }
      await leases.releasePending([...assigned[index]!]).catch(() => undefined);
      syncAssignments();
      // A partition new to this loop may hold entries its previous owner read: those go first.
      for (const p of newlyAssigned[index]!.splice(0)) recovering.add(p);
      if (reconnectionsSeen !== reconnections) {
        reconnectionsSeen = reconnections;
        for (const p of assigned[index]!) recovering.add(p);
        continue; // wait for the steps in flight before reading what is pending
      }
      const now = Date.now();
      const ready = [...assigned[index]!].filter((p) => (failures.get(p)?.retryAtMs ?? 0) <= now);
      if (ready.length === 0) {
        const waits = [...assigned[index]!].map((p) => (failures.get(p)?.retryAtMs ?? now) - now);
        await Promise.race([leases.changed(1000), pause(Math.max(10, Math.min(1000, ...waits)))]);
        continue;
      }
      const perPartition = Math.max(
        1,
        Math.floor(config.workerBatchMaxPayloads / (averageEntry * ready.length)),
      );
      let entries: QueueEntry[];
      try {
        const pending = ready.filter((p) => recovering.has(p));
        if (pending.length > 0) {
          // What was read before and not acknowledged goes first, in queue order.
          const isolated = pending.filter((p) => (failures.get(p)?.count ?? 0) >= ISOLATE_AFTER);
          const batched = pending.filter((p) => !isolated.includes(p));
          entries = [
            ...(await readEntries(reader, keys, batched, { pending: true, count: perPartition })),
            ...(await readEntries(reader, keys, isolated, { pending: true, count: 1 })),
          ];
          const seen = new Set(entries.map((e) => e.partition));
          for (const p of pending) {
            if (seen.has(p)) continue;
            recovering.delete(p);
            failures.delete(p);
          }
          if (entries.length === 0) continue;
        } else {
          // Steady load: let payloads gather so that one step's fixed costs serve many of them.
          const wait = backlog ? 0 : lastStepMs + config.workerStepIntervalMs - Date.now();
          if (wait > 0) await pause(wait);
          entries = await readEntries(reader, keys, ready, {
            pending: false,
            count: perPartition,
            blockMs: BLOCK_MS,
          });
          backlog = fillsAPartition(entries, perPartition);
          if (entries.length === 0) continue;
        }
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (message.includes('NOGROUP')) await ensureGroups(control, keys, partitions).catch(() => undefined);
        log.warn({ err: message }, 'reading the ingest queue failed; retrying');
        for (const p of ready) recovering.add(p);
        await pause(config.jobBackoffMs);
        continue;
      }
      lastStepMs = Date.now();
      const itemCount = entries.reduce((n, e) => n + e.items.length, 0);
      averageEntry = averageEntry * 0.8 + (itemCount / entries.length) * 0.2;

      const isolated = entries.filter((e) => (failures.get(e.partition)?.count ?? 0) >= ISOLATE_AFTER);
      const batch = entries.filter((e) => !isolated.includes(e));
      if (batch.length > 0) {
        try {
          const { finished, refs } = await processEntries(batch, false);
          track(refs, finished);
        } catch (err) {
          failed(batch, err);
        }
      }
      for (const entry of isolated) {
        try {
          await (
            await processEntries([entry], true)
          ).finished;
        } catch (err) {
          failed([entry], err);
          if ((attempts.get(entry.id) ?? 0) >= config.jobAttempts) {
            await moveToDeadLetters(entry, err);
          }
        }
      }
    }
    await Promise.allSettled([...finishing]);

    async function moveToDeadLetters(entry: QueueEntry, err: unknown): Promise<void> {
      const reason = err instanceof Error ? err.message : String(err);
      try {
        await deadLetter(control, keys, entry, reason, deps.deadLettered?.(entry.items));
        attempts.delete(entry.id);
        failures.delete(entry.partition);
        metrics.deadLetters.inc(entry.items.length);
        log.error(
          { partition: entry.partition, entry: entry.id, payloads: entry.items.length, err: reason },
          `queue entry failed ${config.jobAttempts} times; moved to the dead-letter stream`,
        );
      } catch {
        // Redis unreachable: the entry stays pending and is tried again.
      }
    }
  };

  const readers = assigned.map((_, i) => connectRedis(config.redisUrl, 'blocking', `vigil-worker-${i}`));
  for (const reader of readers) countReconnections(reader, false);
  syncAssignments();
  const loops = readers.map((reader, i) =>
    runLoop(i, reader).catch((err: unknown) => {
      log.error({ err: err instanceof Error ? err.message : String(err) }, 'worker step loop crashed');
    }),
  );
  let closed: Promise<void> | undefined;
  return {
    close: () =>
      (closed ??= (async () => {
        closing = true;
        sleeps.wakeAll();
        await Promise.allSettled(loops);
        await leases.close();
        await Promise.all([...readers, control].map((r) => closeRedis(r)));
      })()),
  };
}

/** Whether `entries` hold `count` entries of one partition (the read's count per partition). */
function fillsAPartition(entries: readonly EntryRef[], count: number): boolean {
  const perPartition = new Map<number, number>();
  for (const e of entries) {
    const n = (perPartition.get(e.partition) ?? 0) + 1;
    if (n >= count) return true;
    perPartition.set(e.partition, n);
  }
  return false;
}

function workerMetrics(registry: Registry) {
  const registers = [registry];
  return {
    steps: new Counter({
      name: 'vigil_worker_steps_total',
      help: 'Processing steps (queue entries taken together), by result.',
      labelNames: ['result'],
      registers,
    }),
    payloads: new Counter({ name: 'vigil_worker_payloads_total', help: 'Payloads processed.', registers }),
    values: new Counter({ name: 'vigil_worker_values_total', help: 'Data point values stored.', registers }),
    deadLetters: new Counter({
      name: 'vigil_worker_dead_letter_payloads_total',
      help: 'Payloads moved to the dead-letter stream after VIGIL_JOB_ATTEMPTS failed attempts.',
      registers,
    }),
    payloadFailures: new Counter({
      name: 'vigil_worker_payload_failures_total',
      help: 'Payloads whose processing failed on their own data (PROCESSING_FAILED), moved to the dead-letter stream at once.',
      registers,
    }),
    partitions: new Gauge({
      name: 'vigil_worker_partitions',
      help: 'Ingest queue partitions this worker holds.',
      registers,
    }),
    duration: new Histogram({
      name: 'vigil_worker_step_seconds',
      help: 'Time per processing step.',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
  };
}
