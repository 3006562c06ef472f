/**
 * Which partitions a step loop works on. The worker's leases (partition-leases.ts) say which
 * partitions the worker holds; `assignPartitions` shares them among the worker's loops, and each
 * loop's `LoopPartitions` keeps the tenure (lease value) it read its steps in and hands partitions
 * back between steps only: a partition to hand back starts no new step, and goes once no step of
 * it is finishing, so a hand-back never refuses the worker's own step.
 */
import type { Logger } from '../log/logger.ts';
import type { QueueEntry } from '../queue/ingest-queue.ts';
import type { Fence, PartitionLeases } from '../queue/partition-leases.ts';
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { WorkerMetrics } from './worker-metrics.ts';

/** What a loop owns now, each partition with its lease value, and what is new to it since it asked. */
export interface AssignedPartitions {
  owned: ReadonlyMap<number, string>;
  added: number[];
}

/**
 * Which loop owns which of the worker's partitions: each partition held goes to the loop with the
 * fewest, and stays there until it is handed back or lost. Answers, per loop, what it owns and what
 * is new to it since it last asked — a partition lost and taken again (a new lease value) is new
 * again: its pending entries may be of the tenure that ended.
 */
export function assignPartitions(
  leases: Pick<PartitionLeases, 'held'>,
  loops: number,
  metrics: Pick<WorkerMetrics, 'partitions'>,
): (index: number) => AssignedPartitions {
  const loopOf = new Map<number, { loop: number; lease: string }>();
  const owned = Array.from({ length: loops }, () => new Set<number>());
  const added = owned.map(() => [] as number[]);
  return (index: number) => {
    const held = leases.held();
    for (const [p, { loop, lease }] of loopOf) {
      if (held.get(p) === lease) continue;
      loopOf.delete(p);
      owned[loop]!.delete(p);
    }
    for (const [p, lease] of held) {
      if (loopOf.has(p)) continue;
      const best = fewestOwned(owned);
      loopOf.set(p, { loop: best, lease });
      owned[best]!.add(p);
      added[best]!.push(p);
    }
    metrics.partitions.set(held.size);
    const mine = new Map<number, string>();
    for (const p of owned[index]!) mine.set(p, loopOf.get(p)!.lease);
    return { owned: mine, added: added[index]!.splice(0) };
  };
}

/** The first loop among those owning the fewest partitions. */
function fewestOwned(owned: readonly ReadonlySet<number>[]): number {
  let best = 0;
  owned.forEach((set, i) => {
    if (set.size < owned[best]!.size) best = i;
  });
  return best;
}

export interface LoopPartitionsDeps {
  /** The loop's share of the worker's partitions (`assignPartitions`). */
  assigned: () => AssignedPartitions;
  leases: Pick<PartitionLeases, 'releasing' | 'releasePending'>;
  keys: Pick<QueueKeys, 'partitionLease'>;
  /** Whether a step of `partition` is still finishing (its history or acknowledgement not written). */
  isFinishing: (partition: number) => boolean;
  metrics: Pick<WorkerMetrics, 'handedBack'>;
  log: Logger;
}

/** The partitions of one step loop, as of its last look. */
export class LoopPartitions {
  private readonly deps: LoopPartitionsDeps;
  /**
   * The partitions the loop owned when it last looked, with their lease values: a step runs under
   * the tenure it was read in, never under a later one of the same partition.
   */
  private owned: ReadonlyMap<number, string> = new Map();

  constructor(deps: LoopPartitionsDeps) {
    this.deps = deps;
  }

  /** Looks at what the loop owns now; answers the partitions new to it since the last look. */
  look(): number[] {
    const { owned, added } = this.deps.assigned();
    this.owned = owned;
    return added;
  }

  /** The partitions owned as of the last look. */
  partitions(): number[] {
    return [...this.owned.keys()];
  }

  /** The owned partitions that may start a step: one to hand back starts none. */
  steppable(): number[] {
    const releasing = this.deps.leases.releasing();
    return this.partitions().filter((p) => !releasing.has(p));
  }

  /** Hands back the partitions above this worker's share that have no step finishing. */
  async handBack(): Promise<void> {
    const idle = this.partitions().filter((p) => !this.deps.isFinishing(p));
    try {
      const released = await this.deps.leases.releasePending(idle);
      if (released.length > 0) this.deps.metrics.handedBack.inc(released.length);
    } catch (err) {
      this.deps.log.warn({ err }, 'handing partitions back failed; retried at the next step');
    }
  }

  /** The fence of the partitions of `entries` in the tenure the loop read them in; undefined once one is gone. */
  fenceOf(entries: readonly Pick<QueueEntry, 'partition'>[]): Fence | undefined {
    const partitions = [...new Set(entries.map((e) => e.partition))];
    const values: string[] = [];
    for (const p of partitions) {
      const value = this.owned.get(p);
      if (value === undefined) return undefined;
      values.push(value);
    }
    return { leaseKeys: partitions.map((p) => this.deps.keys.partitionLease(p)), values };
  }
}
