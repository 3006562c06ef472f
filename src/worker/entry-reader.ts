/**
 * Reading a step loop's next step from its partitions: the pending entries of recovering
 * partitions first (new to the loop, or after a fault), else new entries, read under the
 * partitions' leases. Under steady load a read waits until VIGIL_WORKER_STEP_INTERVAL_MS after the
 * last step's start, so that one step's fixed costs serve many payloads; after a read that filled
 * a partition's count (a backlog) the next read goes at once, since waiting would not make it larger.
 */
import type { Config } from '../config/schema.ts';
import { LeaseLostError } from '../errors/lease-lost.ts';
import type { Logger } from '../log/logger.ts';
import type { QueueEntry } from '../queue/ingest-queue.ts';
import type { Fence } from '../queue/partition-leases.ts';
import { replyCode } from '../redis/reply-code.ts';
import type { StepPolicy } from './step-policy.ts';
import type { StepQueue } from './step-queue.ts';

/** Longest a read waits for new entries before the step loop looks at its partitions again. */
export const BLOCK_MS = 250;

export interface EntryReaderDeps {
  config: Pick<
    Config,
    'batchMaxPayloads' | 'workerBatchMaxPayloads' | 'workerStepIntervalMs' | 'jobBackoffMs'
  >;
  queue: Pick<StepQueue, 'readPending' | 'readNew' | 'waitForEntries' | 'ensureGroups'>;
  policy: StepPolicy;
  /** The fence of partitions in the tenure the loop looked at last; undefined once one is gone. */
  fenceOf: (entries: readonly Pick<QueueEntry, 'partition'>[]) => Fence | undefined;
  log: Logger;
  /** A sleep that the worker's close ends early. */
  pause: (ms: number) => Promise<void>;
  now?: () => number;
}

export class EntryReader {
  private readonly deps: EntryReaderDeps;
  private readonly now: () => number;
  /** Payloads per entry, assumed the largest possible until measured (a step stays within its cap). */
  private averageEntry: number;
  private lastStepMs = 0;
  /** The last read filled a partition's count: a backlog, which no wait would make steps larger. */
  private backlog = false;

  constructor(deps: EntryReaderDeps) {
    this.deps = deps;
    this.now = deps.now ?? Date.now;
    this.averageEntry = deps.config.batchMaxPayloads;
  }

  /** The entries of the next step among `ready` partitions; none after a fault (then retried). */
  async read(ready: number[]): Promise<QueueEntry[]> {
    const perPartition = this.perPartition(ready.length);
    try {
      const pending = ready.filter((p) => this.deps.policy.isRecovering(p));
      if (pending.length > 0) return await this.readPending(pending, perPartition);
      return await this.readNew(ready, perPartition);
    } catch (err) {
      return await this.readFailed(ready, err);
    }
  }

  /** A step of `entries` starts: the next read waits from now, and sizes itself by them. */
  stepStarted(entries: readonly QueueEntry[]): void {
    this.lastStepMs = this.now();
    const itemCount = entries.reduce((n, e) => n + e.items.length, 0);
    this.averageEntry = this.averageEntry * 0.8 + (itemCount / entries.length) * 0.2;
  }

  /** Entries per partition that keep a step within VIGIL_WORKER_BATCH_MAX_PAYLOADS; at least one. */
  private perPartition(partitions: number): number {
    return Math.max(
      1,
      Math.floor(this.deps.config.workerBatchMaxPayloads / (this.averageEntry * partitions)),
    );
  }

  /** What was read before and not acknowledged, in queue order; isolated partitions one entry each. */
  private async readPending(pending: number[], perPartition: number): Promise<QueueEntry[]> {
    const { policy, queue } = this.deps;
    const isolated = pending.filter((p) => policy.isIsolated(p));
    const batched = pending.filter((p) => !policy.isIsolated(p));
    const entries = [
      ...(await queue.readPending(batched, perPartition)),
      ...(await queue.readPending(isolated, 1)),
    ];
    const seen = new Set(entries.map((e) => e.partition));
    for (const p of pending) if (!seen.has(p)) policy.recovered(p);
    return entries;
  }

  /** New entries, after the pause that lets payloads gather under steady load. */
  private async readNew(ready: number[], perPartition: number): Promise<QueueEntry[]> {
    const wait = this.backlog ? 0 : this.lastStepMs + this.deps.config.workerStepIntervalMs - this.now();
    if (wait > 0) await this.deps.pause(wait);
    const fence = this.deps.fenceOf(ready.map((partition) => ({ partition })));
    if (!fence) return [];
    const got = await this.deps.queue.readNew(fence, ready, perPartition);
    if ('lastIds' in got) {
      await this.deps.queue.waitForEntries(ready, got.lastIds, BLOCK_MS);
      return [];
    }
    this.backlog = fillsAPartition(got.entries, perPartition);
    return got.entries;
  }

  private async readFailed(ready: readonly number[], err: unknown): Promise<QueueEntry[]> {
    // A lease lost since the loop looked: the next look drops the partition.
    if (err instanceof LeaseLostError) return [];
    const { queue, log, policy } = this.deps;
    if (replyCode(err) === 'NOGROUP') {
      await queue.ensureGroups().catch((e: unknown) => {
        log.warn({ err: e }, 'creating the ingest queue groups failed; retrying');
      });
    }
    log.warn({ err }, 'reading the ingest queue failed; retrying');
    for (const p of ready) policy.recover(p);
    await this.deps.pause(this.deps.config.jobBackoffMs);
    return [];
  }
}

/** Whether `entries` hold `count` entries of one partition (the read's count per partition). */
function fillsAPartition(entries: readonly QueueEntry[], count: number): boolean {
  const perPartition = new Map<number, number>();
  for (const e of entries) {
    const n = (perPartition.get(e.partition) ?? 0) + 1;
    if (n >= count) return true;
    perPartition.set(e.partition, n);
  }
  return false;
}
