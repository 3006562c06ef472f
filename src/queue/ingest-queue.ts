/**
 * The ingest queue in Redis: one stream per partition, read through one consumer group.
 *
 * An entry is one micro-batch from the gateway (`n` = payload count, `p` = the items, entryFields). A
 * worker reads entries of the partitions it holds a lease on (see partition-leases.ts), processes
 * them, then acknowledges and deletes them in one MULTI, so a stream's length is exactly its
 * unfinished entries. An entry read but not acknowledged stays in the group's pending list; the
 * next owner of the partition reads the pending entries first (ID 0), so a crash or a failed
 * step delays entries and never drops them.
 *
 * Every worker reads as the same consumer: the lease, not the consumer name, makes a partition's
 * reader exclusive, and whoever holds the lease inherits the pending entries with it.
 */
import type { ChainableCommander } from 'ioredis';
import type { Redis } from '../redis/connect.ts';
import type { Keys } from '../state/keys.ts';
import { packItems, unpackItems } from './item-codec.ts';
import type { IngestItem } from './jobs.ts';

export const INGEST_GROUP = 'vigil';
export const INGEST_CONSUMER = 'vigil';

/** One stream entry with the partition it came from. */
export interface QueueEntry {
  partition: number;
  id: string;
  items: IngestItem[];
}

/**
 * The fields of a new entry holding `items`: `n` the count, `p` the items (item-codec.ts). Entries
 * written by earlier versions hold `d`, the items as JSON, and are read as before.
 */
export function entryFields(items: readonly IngestItem[]): [string, string, string, string] {
  return ['n', String(items.length), 'p', packItems(items)];
}

/** Creates the consumer group of every partition (reading from the start); existing ones stay. */
export async function ensureGroups(redis: Redis, keys: Keys, partitions: number): Promise<void> {
  const pipeline = redis.pipeline();
  for (let p = 0; p < partitions; p++) {
    pipeline.call('XGROUP', 'CREATE', keys.ingestStream(p), INGEST_GROUP, '0', 'MKSTREAM');
  }
  const results = (await pipeline.exec()) ?? [];
  for (const [err] of results) {
    if (err && !err.message.includes('BUSYGROUP')) throw err;
  }
}

type StreamReply = [key: string, entries: [id: string, fields: string[] | null][]][] | null;

/**
 * Reads entries of `partitions`: new ones (`>`, waiting up to `blockMs` when none), or with
 * `pending` the ones read before and not acknowledged (oldest first). At most `count` entries per
 * partition. Entries come grouped by partition, each partition's in queue order.
 */
export async function readEntries(
  redis: Redis,
  keys: Keys,
  partitions: readonly number[],
  opts: { pending: boolean; count: number; blockMs?: number },
): Promise<QueueEntry[]> {
  if (partitions.length === 0) return [];
  const streams = partitions.map((p) => keys.ingestStream(p));
  const partitionOfKey = new Map(streams.map((k, i) => [k, partitions[i]!]));
  const args: (string | number)[] = ['GROUP', INGEST_GROUP, INGEST_CONSUMER, 'COUNT', opts.count];
  if (!opts.pending && opts.blockMs !== undefined) args.push('BLOCK', opts.blockMs);
  args.push('STREAMS', ...streams, ...streams.map(() => (opts.pending ? '0' : '>')));
  const reply = (await redis.call('XREADGROUP', ...args)) as StreamReply;
  const entries: QueueEntry[] = [];
  for (const [key, list] of reply ?? []) {
    const partition = partitionOfKey.get(key)!;
    for (const [id, fields] of list) {
      entries.push({ partition, id, items: fields ? decodeItems(fields) : [] });
    }
  }
  return entries;
}

function decodeItems(fields: readonly string[]): IngestItem[] {
  const f = fieldMap(fields);
  const packed = f.get('p');
  if (packed !== undefined) return unpackItems(packed);
  const json = f.get('d');
  return json === undefined ? [] : (JSON.parse(json) as IngestItem[]);
}

/** A stream entry's flat field list as a map. */
function fieldMap(fields: readonly string[]): Map<string, string> {
  const map = new Map<string, string>();
  for (let i = 0; i + 1 < fields.length; i += 2) map.set(fields[i]!, fields[i + 1]!);
  return map;
}

/**
 * Acknowledges and deletes entries, atomically per call, together with the commands `along` adds
 * to the same MULTI: what must happen once per entry and not again when a failed step is retried.
 */
export async function ackEntries(
  redis: Redis,
  keys: Keys,
  entries: readonly Pick<QueueEntry, 'partition' | 'id'>[],
  along?: (multi: ChainableCommander) => void,
): Promise<void> {
  if (entries.length === 0) return;
  const multi = redis.multi();
  along?.(multi);
  for (const [partition, ids] of idsByPartition(entries)) {
    const stream = keys.ingestStream(partition);
    multi.xack(stream, INGEST_GROUP, ...ids);
    multi.xdel(stream, ...ids);
  }
  const results = await multi.exec();
  if (!results) throw new Error('queue acknowledgement was aborted');
  for (const [err] of results) if (err) throw err;
}

/**
 * Moves an entry that kept failing to the dead-letter stream, with the reason, in the same MULTI
 * that removes it from its partition (and with the commands `along` adds): it is kept, and the
 * partition moves on.
 */
export async function deadLetter(
  redis: Redis,
  keys: Keys,
  entry: QueueEntry,
  reason: string,
  along?: (multi: ChainableCommander) => void,
): Promise<void> {
  const stream = keys.ingestStream(entry.partition);
  const multi = redis.multi();
  along?.(multi);
  const results = await multi
    .xadd(
      keys.deadLetters(),
      '*',
      'partition',
      String(entry.partition),
      'entry',
      entry.id,
      'reason',
      reason.slice(0, 2000),
      ...entryFields(entry.items),
    )
    .xack(stream, INGEST_GROUP, entry.id)
    .xdel(stream, entry.id)
    .exec();
  if (!results) throw new Error('dead-lettering was aborted');
  for (const [err] of results) if (err) throw err;
}

/**
 * Adds to `multi` a dead-letter entry holding `items` of queue entry `entry`, with the reason:
 * payloads whose processing failed on their own data, moved aside by the MULTI that acknowledges
 * their entry, so that they are neither lost nor processed twice. They are listed and requeued like
 * any dead letter.
 */
export function addDeadLetter(
  multi: ChainableCommander,
  keys: Keys,
  entry: Pick<QueueEntry, 'partition' | 'id'>,
  items: readonly IngestItem[],
  reason: string,
): void {
  multi.xadd(
    keys.deadLetters(),
    '*',
    'partition',
    String(entry.partition),
    'entry',
    entry.id,
    'reason',
    reason.slice(0, 2000),
    ...entryFields(items),
  );
}

function idsByPartition(entries: readonly Pick<QueueEntry, 'partition' | 'id'>[]): Map<number, string[]> {
  const byPartition = new Map<number, string[]>();
  for (const e of entries) {
    const ids = byPartition.get(e.partition);
    if (ids) ids.push(e.id);
    else byPartition.set(e.partition, [e.id]);
  }
  return byPartition;
}

/** Unfinished entries (waiting or being processed) over all partitions: one pipelined round trip. */
export async function countEntries(redis: Redis, keys: Keys, partitions: number): Promise<number> {
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

/** Every queued item (unfinished entries, partition by partition, in queue order): tests, tools. */
export async function queuedItems(redis: Redis, keys: Keys, partitions: number): Promise<IngestItem[]> {
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
  keys: Keys,
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
  keys: Keys,
  ids?: readonly string[],
): Promise<string[]> {
  const wanted = ids === undefined ? undefined : new Set(ids);
  const moved: string[] = [];
  for (const [id, fields] of await redis.xrange(keys.deadLetters(), '-', '+')) {
    if (wanted && !wanted.has(id)) continue;
    const f = fieldMap(fields);
    const results = await redis
      .multi()
      .xadd(
        keys.ingestStream(Number(f.get('partition'))),
        '*',
        'n',
        f.get('n') ?? '0',
        ...(f.has('p') ? ['p', f.get('p') ?? ''] : ['d', f.get('d') ?? '[]']),
      )
      .xdel(keys.deadLetters(), id)
      .exec();
    if (!results) throw new Error('requeueing was aborted');
    for (const [err] of results) if (err) throw err;
    moved.push(id);
  }
  return moved;
}
