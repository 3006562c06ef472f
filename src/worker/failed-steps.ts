/**
 * What becomes of a step that did not complete. Stale — a lease it ran under changed hands, so Redis
 * refused its effects — it is dropped with one sampled warning and counted; its entries are the
 * partition's new owner's. Failed as this worker saw (Redis unreachable, InfluxDB) it is retried
 * after the step policy's back-off, its takes given back, since such a failure is not a crash. An
 * entry given up on moves to the dead-letter stream under its lease.
 */
import type { IngestItem } from '../domain/ingest-item.ts';
import { LeaseLostError } from '../errors/lease-lost.ts';
import { sampledWarning, type Logger } from '../log/logger.ts';
import { deadLetterCommand } from '../queue/fenced-step.ts';
import type { QueueEntry } from '../queue/ingest-queue.ts';
import type { Fence } from '../queue/partition-leases.ts';
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { RedisCommand } from '../redis/command.ts';
import type { StepPolicy } from './step-policy.ts';
import type { EntryPlace, StepQueue } from './step-queue.ts';
import type { WorkerMetrics } from './worker-metrics.ts';

export interface FailedStepsDeps {
  keys: QueueKeys;
  queue: Pick<StepQueue, 'release' | 'finish'>;
  policy: StepPolicy;
  metrics: Pick<WorkerMetrics, 'steps' | 'fencedSteps' | 'deadLetters'>;
  log: Logger;
  /** The ingestion-log commands of items that are dead-lettered. */
  deadLetterLog: (items: IngestItem[], reason: string) => RedisCommand[];
}

export class FailedSteps {
  private readonly deps: FailedStepsDeps;
  private readonly staleWarning: (fields: Record<string, unknown>) => void;

  constructor(deps: FailedStepsDeps) {
    this.deps = deps;
    this.staleWarning = sampledWarning(
      deps.log,
      "processing step refused: its partition lease changed hands (this worker stalled); the partition's new owner processes its payloads",
    );
  }

  /** A step of `entries` was refused: a lease it ran under changed hands. */
  stale(entries: readonly Pick<QueueEntry, 'partition'>[]): void {
    this.deps.metrics.fencedSteps.inc();
    this.staleWarning({ partitions: partitionsOf(entries) });
  }

  /** A step failed: stale, or retried after a back-off with its takes given back. */
  async failed(entries: readonly EntryPlace[], fence: Fence, err: unknown, alone: boolean): Promise<void> {
    if (err instanceof LeaseLostError) {
      this.stale(entries);
      return;
    }
    const { policy, metrics, log, queue } = this.deps;
    policy.failed(entries);
    metrics.steps.inc({ result: 'failed' });
    log.warn(
      { partitions: partitionsOf(entries), entries: entries.length, err },
      'processing step failed; its entries stay queued and are retried',
    );
    // A failure this worker saw is not a crash: give the takes back (if the leases still hold).
    await queue.release(fence, entries, alone).catch((e: unknown) => {
      if (!(e instanceof LeaseLostError))
        log.warn({ err: e }, 'giving back the takes of a failed step failed; they count as a crash');
    });
  }

  /** Taking `entries` failed: stale, or read again from their pending entries. */
  takeFailed(entries: readonly QueueEntry[], err: unknown): void {
    if (err instanceof LeaseLostError) this.stale(entries);
    else {
      this.deps.log.warn({ err }, 'taking queue entries failed; retrying');
      for (const e of entries) this.deps.policy.recover(e.partition);
    }
  }

  /** Moves an entry to the dead-letter stream (kept, listed, requeueable), under its lease. */
  async deadLetter(entry: QueueEntry, fence: Fence, reason: string): Promise<void> {
    const { keys, queue, policy, metrics, log } = this.deps;
    try {
      await queue.finish(
        fence,
        [entry],
        [
          ...this.deps.deadLetterLog(entry.items, reason),
          deadLetterCommand(keys, entry, entry.items, reason),
        ],
      );
      policy.forget(entry);
      metrics.deadLetters.inc(entry.items.length);
      log.error(
        { partition: entry.partition, entry: entry.id, payloads: entry.items.length, reason },
        'queue entry moved to the dead-letter stream',
      );
    } catch (err) {
      if (err instanceof LeaseLostError) this.stale([entry]);
      // Else Redis unreachable: the entry stays pending and is tried again.
      else log.warn({ err }, 'dead-lettering failed; the entry stays queued');
    }
  }
}

function partitionsOf(entries: readonly Pick<QueueEntry, 'partition'>[]): number[] {
  return [...new Set(entries.map((e) => e.partition))];
}
