/**
 * Redis keys of the ingest queue. One hash tag, `{q}`, for all of them: a worker reads all its
 * partitions in one XREADGROUP, and a script may touch leases and streams together.
 */
export interface QueueKeys {
  readonly prefix: string;
  /** Stream of one ingest queue partition (entries: `n` = payload count, `p` = the items, ingest-queue.ts). */
  ingestStream(partition: number): string;
  /** Lease of an ingest partition: `<worker token>:<fence>` of the worker that owns it, with a TTL. */
  partitionLease(partition: number): string;
  /** Counter of a partition's fencing tokens: raised every time the partition changes hands. */
  partitionFence(partition: number): string;
  /** Hash entry id → steps that took the entry and never finished (crashed or fenced); `<id>:a` → crashes it caused alone. */
  takenCounts(partition: number): string;
  /** Sorted set of live worker tokens by last heartbeat (epoch ms): sizes each worker's share. */
  queueWorkers(): string;
  /** Stream of queue entries moved aside (kept, not dropped), with their reason. */
  deadLetters(): string;
  /** Hash env → payloads of that environment in the ingest queue (ingest-queue.ts), for BACKLOG_FULL. */
  queueBacklog(): string;
}

export function queueKeys(prefix: string): QueueKeys {
  const p = prefix;
  return {
    prefix: p,
    ingestStream: (n) => `${p}:{q}:ingest-${n}`,
    partitionLease: (n) => `${p}:{q}:lease-${n}`,
    partitionFence: (n) => `${p}:{q}:fence-${n}`,
    takenCounts: (n) => `${p}:{q}:taken-${n}`,
    queueWorkers: () => `${p}:{q}:workers`,
    deadLetters: () => `${p}:{q}:dead`,
    queueBacklog: () => `${p}:{q}:backlog`,
  };
}
