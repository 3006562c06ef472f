/**
 * The ingest queue in Redis: one stream per partition, read through one consumer group.
 *
 * An entry is one micro-batch from the gateway (`n` = payload count, `p` = the items, entryFields). A
 * worker reads entries of the partitions it holds a lease on (see partition-leases.ts), processes
 * them, then acknowledges and deletes them in the script that finishes the step (fenced-step.ts,
 * under the partition's lease), so a stream's length is exactly its unfinished entries. An entry read but not acknowledged stays in the group's pending list; the
 * next owner of the partition reads the pending entries first (ID 0), so a crash or a failed
 * step delays entries and never drops them.
 *
 * Every worker reads as the same consumer: the lease, not the consumer name, makes a partition's
 * reader exclusive, and whoever holds the lease inherits the pending entries with it.
 *
 * Backlog counts: the hash `queueBacklog` holds, per environment, the payloads of the entries in
 * the partitions (for BACKLOG_FULL, ingest/backlog.ts). Each change rides with the stream change
 * that causes it, atomically: the producer's XADD (same MULTI), the acknowledgement and the
 * dead-lettering (fenced-step.lua, which decrements only for an entry it deleted itself, so one
 * acknowledged twice is counted once), the requeueing of dead letters (same MULTI). So the counts
 * cannot drift through a crash, and a Redis restart keeps or loses them together with the streams
 * (same AOF transaction, same snapshot). Entries written before the counts existed were never
 * counted: acknowledging them cannot take a count below zero (the field is removed at zero), and
 * a sample that finds the whole queue empty clears the hash, which mends anything else.
 */
import { readFileSync } from 'node:fs';
import type { ChainableCommander } from 'ioredis';
import { replyCode } from '../redis/reply-code.ts';
import type { Redis } from '../redis/connect.ts';
import type { QueueKeys } from './queue-keys.ts';
import { packItems, unpackItems } from './item-codec.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import { LeaseLostError } from '../errors/lease-lost.ts';
import type { Fence } from './partition-leases.ts';

const READ_NEW = readFileSync(new URL('./lua/read-new.lua', import.meta.url), 'utf8');

export const INGEST_GROUP = 'vigil';
export const INGEST_CONSUMER = 'vigil';

/** One stream entry with the partition it came from. */
export interface QueueEntry {
  partition: number;
  id: string;
  items: IngestItem[];
  /** Payloads per environment among `items`: what acknowledging the entry takes off the backlog counts. */
  payloadsByEnv: EnvCounts;
}

/** Payloads per environment. */
export type EnvCounts = ReadonlyMap<string, number>;

/** Payloads per environment among `items`. */
export function countByEnv(items: readonly IngestItem[]): Map<string, number> {
  const counts = new Map<string, number>();
  for (const item of items) counts.set(item.env, (counts.get(item.env) ?? 0) + 1);
  return counts;
}

/** Adds `counts` to the backlog counts, in `multi` (beside the XADD of their entries). */
export function addToBacklog(multi: ChainableCommander, keys: QueueKeys, counts: EnvCounts): void {
  for (const [env, n] of counts) multi.hincrby(keys.queueBacklog(), env, n);
}

/** The fields of a new entry holding `items`: `n` the count, `p` the items (item-codec.ts). */
export function entryFields(items: readonly IngestItem[]): [string, string, string, string] {
  return ['n', String(items.length), 'p', packItems(items)];
}

/** Creates the consumer group of every partition (reading from the start); existing ones stay. */
export async function ensureGroups(redis: Redis, keys: QueueKeys, partitions: number): Promise<void> {
  const pipeline = redis.pipeline();
  for (let p = 0; p < partitions; p++) {
    pipeline.call('XGROUP', 'CREATE', keys.ingestStream(p), INGEST_GROUP, '0', 'MKSTREAM');
  }
  const results = (await pipeline.exec()) ?? [];
  for (const [err] of results) {
    if (err && replyCode(err) !== 'BUSYGROUP') throw err;
  }
}

type StreamReply = [key: string, entries: [id: string, fields: string[] | null][]][] | null;

/**
 * Reads the entries of `partitions` read before and not acknowledged (oldest first), at most `count`
 * per partition: what a partition's new owner, or a step loop after a fault, processes first.
 * Entries come grouped by partition, each partition's in queue order.
 */
export async function readPending(
  redis: Redis,
  keys: QueueKeys,
  partitions: readonly number[],
  count: number,
): Promise<QueueEntry[]> {
  if (partitions.length === 0) return [];
  const streams = partitions.map((p) => keys.ingestStream(p));
  const args = ['GROUP', INGEST_GROUP, INGEST_CONSUMER, 'COUNT', count, 'STREAMS', ...streams];
  const reply = (await redis.call('XREADGROUP', ...args, ...streams.map(() => '0'))) as StreamReply;
  return entriesOf(reply, streams, partitions);
}

/**
 * Reads new entries of `partitions` (at most `count` per partition) under `fence`: nothing is read
 * once a lease has changed hands (LeaseLostError). When there are none, answers the id of each
 * stream's newest entry, for `waitForEntries`.
 */
export async function readNew(
  redis: Redis,
  keys: QueueKeys,
  fence: Fence,
  partitions: readonly number[],
  count: number,
): Promise<{ entries: QueueEntry[] } | { lastIds: string[] }> {
  if (partitions.length === 0) return { entries: [] };
  const streams = partitions.map((p) => keys.ingestStream(p));
  const r = redis as Redis & {
    vigilReadNew?: (
      n: number,
      ...args: (string | number)[]
    ) => Promise<[StreamReply] | [null, string[]] | number>;
  };
  if (typeof r.vigilReadNew !== 'function') redis.defineCommand('vigilReadNew', { lua: READ_NEW });
  const reply = await r.vigilReadNew!(
    streams.length,
    ...streams,
    fence.leaseKeys.length,
    ...fence.leaseKeys,
    ...fence.values,
    count,
    INGEST_GROUP,
    INGEST_CONSUMER,
  );
  if (!Array.isArray(reply)) throw new LeaseLostError();
  const [found, lastIds] = reply;
  return found ? { entries: entriesOf(found, streams, partitions) } : { lastIds: lastIds ?? [] };
}

/**
 * Waits up to `blockMs` for an entry newer than `lastIds` in any of `partitions` (plain XREAD: it
 * reads nothing for the group, so a reader that lost its lease meanwhile takes nothing away).
 */
export async function waitForEntries(
  redis: Redis,
  keys: QueueKeys,
  partitions: readonly number[],
  lastIds: readonly string[],
  blockMs: number,
): Promise<void> {
  if (partitions.length === 0) return;
  const streams = partitions.map((p) => keys.ingestStream(p));
  await redis.call('XREAD', 'COUNT', 1, 'BLOCK', blockMs, 'STREAMS', ...streams, ...lastIds);
}

function entriesOf(
  reply: StreamReply,
  streams: readonly string[],
  partitions: readonly number[],
): QueueEntry[] {
  const partitionOfKey = new Map(streams.map((k, i) => [k, partitions[i]!]));
  const entries: QueueEntry[] = [];
  for (const [key, list] of reply ?? []) {
    const partition = partitionOfKey.get(key)!;
    for (const [id, fields] of list) {
      // null fields: deleted after it was read (acknowledged, or dead-lettered) and already uncounted.
      const items = fields ? decodeItems(fields) : [];
      entries.push({ partition, id, items, payloadsByEnv: countByEnv(items) });
    }
  }
  return entries;
}

function decodeItems(fields: readonly string[]): IngestItem[] {
  const packed = fieldMap(fields).get('p');
  return packed === undefined ? [] : unpackItems(packed);
}

/**
 * Payloads per environment of a dead letter's items; none for items that do not decode, which go
 * back as they were and fail again (so they also leave the queue without a count to take off).
 */
function countsOfDeadLetter(fields: readonly string[]): EnvCounts {
  try {
    return countByEnv(decodeItems(fields));
  } catch {
    return new Map();
  }
}

/** A stream entry's flat field list as a map. */
function fieldMap(fields: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i]!, fields[i + 1]!);
  return map;
}

/** Unfinished entries (waiting or being processed) over all partitions: one pipelined round trip. */
export async function countEntries(redis: Redis, keys: QueueKeys, partitions: number): Promise<number> {
  const pipeline = redis.pipeline();
  for (let p = 0; p < partitions; p++) pipeline.xlen(keys.ingestStream(p));
  const results = (await pipeline.exec()) ?? [];
  let total = 0;
  for (const [err, n] of results) {
    if (err) throw err;
    total += n as number;
  }
  return total;
}

/**
 * Unfinished entries over all partitions (KEYS[2…]) and the backlog counts (KEYS[1]) as one
 * snapshot; with the queue empty, the counts are cleared: nothing can be left to count.
 */
const SAMPLE_BACKLOG = `
local entries = 0
for i = 2, #KEYS do entries = entries + redis.call('XLEN', KEYS[i]) end
if entries == 0 then
  redis.call('DEL', KEYS[1])
  return {0, {}}
end
return {entries, redis.call('HGETALL', KEYS[1])}`;

/** The queue's unfinished entries and the payloads per environment in them, in one round trip. */
export async function sampleBacklog(
  redis: Redis,
  keys: QueueKeys,
  partitions: number,
): Promise<{ entries: number; payloadsByEnv: EnvCounts }> {
  const streams = Array.from({ length: partitions }, (_, p) => keys.ingestStream(p));
  const [entries, flat] = (await redis.eval(
    SAMPLE_BACKLOG,
    1 + partitions,
    keys.queueBacklog(),
    ...streams,
  )) as [number, string[]];
  const payloadsByEnv = new Map<string, number>();
  for (let i = 0; i + 1 < flat.length; i += 2) {
    const n = Number(flat[i + 1]);
    if (n > 0) payloadsByEnv.set(flat[i]!, n);
  }
  return { entries, payloadsByEnv };
}

/** Every queued item (unfinished entries, partition by partition, in queue order): tests, tools. */
export async function queuedItems(redis: Redis, keys: QueueKeys, partitions: number): Promise<IngestItem[]> {
  const items: IngestItem[] = [];
  for (let p = 0; p < partitions; p++) {
    for (const [, fields] of await redis.xrange(keys.ingestStream(p), '-', '+')) {
      items.push(...decodeItems(fields));
    }
  }
  return items;
}

/** The dead-letter stream: entry id, partition, reason and payload count of each. */
export async function listDeadLetters(
  redis: Redis,
  keys: QueueKeys,
): Promise<{ id: string; partition: number; reason: string; items: number }[]> {
  const out: { id: string; partition: number; reason: string; items: number }[] = [];
  for (const [id, fields] of await redis.xrange(keys.deadLetters(), '-', '+')) {
    const f = fieldMap(fields);
    out.push({
      id,
      partition: Number(f.get('partition')),
      reason: f.get('reason') ?? '',
      items: Number(f.get('n') ?? 0),
    });
  }
  return out;
}

/**
 * Puts dead-lettered entries (all, or those with the given dead-letter ids) back at the end of
 * their partitions, each in one MULTI with its removal from the dead-letter stream. Returns the
 * ids moved; unknown ids are ignored.
 */
export async function requeueDeadLetters(
  redis: Redis,
  keys: QueueKeys,
  ids?: readonly string[],
): Promise<string[]> {
  const wanted = ids === undefined ? undefined : new Set(ids);
  const moved: string[] = [];
  for (const [id, fields] of await redis.xrange(keys.deadLetters(), '-', '+')) {
    if (wanted && !wanted.has(id)) continue;
    const f = fieldMap(fields);
    const multi = redis
      .multi()
      .xadd(keys.ingestStream(Number(f.get('partition'))), '*', 'n', f.get('n') ?? '0', 'p', f.get('p') ?? '')
      .xdel(keys.deadLetters(), id);
    addToBacklog(multi, keys, countsOfDeadLetter(fields));
    const results = await multi.exec();
    if (!results) throw new Error('requeueing was aborted');
    for (const [err] of results) if (err) throw err;
    moved.push(id);
  }
  return moved;
}
