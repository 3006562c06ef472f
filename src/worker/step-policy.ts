/**
 * What a step loop decides about failures, per partition: after a failed step its partitions wait
 * (a doubling delay from VIGIL_JOB_BACKOFF_MS up to VIGIL_JOB_BACKOFF_MAX_MS) and are read from
 * their pending entries again; after `isolateAfter` failures in a row a partition's entries are
 * taken one at a time, so a bad entry holds up its own partition only; an entry that failed
 * `maxAttempts` times (failures this worker saw, such as InfluxDB being down) is given up on.
 * Crashes — steps that never finished — are counted in Redis instead (fenced-step.ts).
 */
import { cappedBackoff } from '../lib/backoff.ts';

export interface StepPolicyOptions {
  backoffMs: number;
  backoffMaxMs: number;
  /** Failed steps in a row after which a partition is read one entry at a time. */
  isolateAfter: number;
  /** Failures of one entry after which it is moved to the dead-letter stream. */
  maxAttempts: number;
  clock?: () => number;
}

interface PartitionFailure {
  count: number;
  retryAtMs: number;
}

export interface StepPolicy {
  /** Marks `partition` to be read from its pending entries first (new to this loop, after a fault). */
  recover(partition: number): void;
  isRecovering(partition: number): boolean;
  /** Its pending entries are all done: new entries next. */
  recovered(partition: number): void;
  /** The partitions among `partitions` whose back-off has passed. */
  ready(partitions: Iterable<number>): number[];
  /** How long until the first of `partitions` is ready again, in ms (at least 10, at most 1000). */
  waitMs(partitions: Iterable<number>): number;
  /** Whether `partition` is read one entry at a time. */
  isIsolated(partition: number): boolean;
  /** A step over these entries failed: back off their partitions, count an attempt per entry. */
  failed(entries: readonly { partition: number; id: string }[]): void;
  /** These entries are done (`isolated`: they were taken one at a time). */
  succeeded(entries: readonly { partition: number; id: string }[], isolated: boolean): void;
  /** Whether the entry has failed `maxAttempts` times. */
  exhausted(entryId: string): boolean;
  /** The entry left the queue (dead-lettered): forget it and let its partition go on. */
  forget(entry: { partition: number; id: string }): void;
}

export function createStepPolicy(opts: StepPolicyOptions): StepPolicy {
  const clock = opts.clock ?? Date.now;
  const recovering = new Set<number>();
  const failures = new Map<number, PartitionFailure>();
  const attempts = new Map<string, number>();
  return {
    recover: (p) => void recovering.add(p),
    isRecovering: (p) => recovering.has(p),
    recovered(p) {
      recovering.delete(p);
      failures.delete(p);
    },
    ready(partitions) {
      const now = clock();
      return [...partitions].filter((p) => (failures.get(p)?.retryAtMs ?? 0) <= now);
    },
    waitMs(partitions) {
      const now = clock();
      const waits = [...partitions].map((p) => (failures.get(p)?.retryAtMs ?? now) - now);
      return Math.max(10, Math.min(1000, ...waits));
    },
    isIsolated: (p) => (failures.get(p)?.count ?? 0) >= opts.isolateAfter,
    failed(entries) {
      const now = clock();
      for (const p of new Set(entries.map((e) => e.partition))) {
        const count = (failures.get(p)?.count ?? 0) + 1;
        failures.set(p, { count, retryAtMs: now + cappedBackoff(count, opts.backoffMs, opts.backoffMaxMs) });
        recovering.add(p);
      }
      for (const e of entries) attempts.set(e.id, (attempts.get(e.id) ?? 0) + 1);
    },
    succeeded(entries, isolated) {
      for (const e of entries) {
        attempts.delete(e.id);
        // An isolated partition stays isolated until none of its failed entries is left pending.
        if (isolated) failures.set(e.partition, { count: opts.isolateAfter, retryAtMs: 0 });
        else failures.delete(e.partition);
      }
    },
    exhausted: (id) => (attempts.get(id) ?? 0) >= opts.maxAttempts,
    forget(e) {
      attempts.delete(e.id);
      failures.delete(e.partition);
    },
  };
}
