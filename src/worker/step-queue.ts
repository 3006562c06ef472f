/**
 * What a step loop does to the ingest queue in Redis, as one port: its reads on the loop's own
 * connection, the groups, takes and acknowledgements on the worker's command connection. The
 * loop's parts are given this port, so their unit tests drive them with a fake, without Redis.
 * Every fenced call answers LeaseLostError once a lease of its fence has changed hands.
 */
import type { RedisCommand } from '../redis/command.ts';
import type { Redis } from '../redis/connect.ts';
import { finishStep, releaseEntries, takeEntries, type EntryRef, type Takes } from '../queue/fenced-step.ts';
import {
  ensureGroups,
  readNew,
  readPending,
  waitForEntries,
  type QueueEntry,
} from '../queue/ingest-queue.ts';
import type { Fence } from '../queue/partition-leases.ts';
import type { QueueKeys } from '../queue/queue-keys.ts';

/** An entry as far as taking it, giving its take back or failing it needs. */
export type EntryPlace = Pick<QueueEntry, 'partition' | 'id'>;

export interface StepQueue {
  /** Entries read before and not acknowledged, oldest first, at most `count` per partition. */
  readPending(partitions: readonly number[], count: number): Promise<QueueEntry[]>;
  /** New entries under `fence`, at most `count` per partition; when none, each stream's newest id. */
  readNew(
    fence: Fence,
    partitions: readonly number[],
    count: number,
  ): Promise<{ entries: QueueEntry[] } | { lastIds: string[] }>;
  /** Waits up to `blockMs` for an entry newer than `lastIds` in any of `partitions`; reads nothing. */
  waitForEntries(partitions: readonly number[], lastIds: readonly string[], blockMs: number): Promise<void>;
  /** Creates the consumer group of every partition (a stream deleted meanwhile loses its group). */
  ensureGroups(): Promise<void>;
  /** Records the take of `entries` by a step (crash counts, take-entries.lua). */
  take(fence: Fence, entries: readonly EntryPlace[], mode: 'batch' | 'suspects'): Promise<Takes>;
  /** Gives the takes of a step that failed, as this worker saw, back. */
  release(fence: Fence, entries: readonly EntryPlace[], alone: boolean): Promise<void>;
  /** Runs `commands`, then acknowledges and deletes `entries`, in one fenced script. */
  finish(fence: Fence, entries: readonly EntryRef[], commands: readonly RedisCommand[]): Promise<void>;
}

export function createStepQueue(deps: {
  /** The loop's connection for (blocking) reads. */
  reader: Redis;
  /** The worker's command connection. */
  control: Redis;
  keys: QueueKeys;
  partitions: number;
}): StepQueue {
  const { reader, control, keys } = deps;
  return {
    readPending: (partitions, count) => readPending(reader, keys, partitions, count),
    readNew: (fence, partitions, count) => readNew(reader, keys, fence, partitions, count),
    waitForEntries: (partitions, lastIds, blockMs) =>
      waitForEntries(reader, keys, partitions, lastIds, blockMs),
    ensureGroups: () => ensureGroups(control, keys, deps.partitions),
    take: (fence, entries, mode) => takeEntries(control, keys, fence, entries, mode),
    release: (fence, entries, alone) => releaseEntries(control, keys, fence, entries, alone),
    finish: (fence, entries, commands) => finishStep(control, keys, fence, entries, commands),
  };
}
