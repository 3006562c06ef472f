/**
 * Capped lists written a moment later, together: entries are gathered per list, the newest `cap` of
 * each kept, and written at the next tick of a `delayMs` grid — one LPUSH and one LTRIM per list,
 * however many entries it gathered. For lists people look at (the worker's recent payloads, the
 * notifier's delivery log), where writing each entry as it comes would cost a Redis round trip per
 * entry on a hot path. An entry shows up to `delayMs` late, and a process killed loses what it had
 * gathered.
 *
 * A failed write is tried again with the next one (`retryFailed`) while everything held stays under
 * `maxHeldUnits`, or logged and given up: a write whose reply a dropped connection lost may then
 * be there twice, which a retrying list's readers must leave out. Gathering more than
 * `maxHeldUnits` starts a write at once.
 */
import { sampledWarning, type Logger } from '../log/logger.ts';
import type { Redis } from './connect.ts';

/** Entries held by default (UTF-16 units), and kept after a failed write while under it. */
const MAX_HELD_UNITS = 8 * 1024 * 1024;

/** A list's gathered entries, oldest first, with what its first add gave beside them. */
export interface GatheredList<M> {
  readonly meta: M;
  readonly entries: string[];
}

/** Gathered lists by key, in the order they were first added. */
export type GatheredLists<M> = ReadonlyMap<string, GatheredList<M>>;

/** Gathers entries of capped lists and writes them together (module comment). */
export interface CappedListWriter<M = void> {
  /** Adds `entries` (oldest first) to the list `key`; `meta` goes to a write of one's own. */
  add(key: string, entries: readonly string[], meta: M): void;
  /** Writes what was gathered until now, after the write under way if there is one. */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left; safe to call twice. Later adds are not written. */
  close(): Promise<void>;
}

export interface CappedListWriterOptions<M> {
  redis: Redis;
  /** Entries kept per list. */
  cap: number;
  /** How often the lists are written while entries come, in ms: an entry waits at most this long. */
  delayMs: number;
  log: Logger;
  /** What the lists are, in log lines ("recent payloads"). */
  what: string;
  /** Whether a failed write's entries are written with the next one, or given up. */
  retryFailed: boolean;
  /** Gathered entries (UTF-16 units) above which they are written at once; default 8 Mi. */
  maxHeldUnits?: number;
  /**
   * Writes the gathered lists, each as LPUSH and LTRIM to `cap` (default: a transaction of those,
   * passing over a key that holds no list). A write of one's own may skip lists, never reorder.
   */
  write?: (lists: GatheredLists<M>) => Promise<void>;
}

export function startCappedListWriter<M = void>(o: CappedListWriterOptions<M>): CappedListWriter<M> {
  const maxUnits = o.maxHeldUnits ?? MAX_HELD_UNITS;
  const failed = sampledWarning(o.log, `writing ${o.what} failed; they are written with the next ones`);
  const givenUp = sampledWarning(o.log, `writing ${o.what} failed; they are lost`);
  const notList = sampledWarning(o.log, `a key of ${o.what} holds no list: its entries are not kept`);
  const write = o.write ?? ((lists: GatheredLists<M>) => writeCappedLists(o.redis, lists, o.cap, notList));
  let gathered = new Map<string, GatheredList<M>>();
  let units = 0;
  let timer: NodeJS.Timeout | undefined;
  let writing: Promise<void> | undefined;
  let closing: Promise<void> | undefined;

  const startMs = performance.now();
  // On a grid of `delayMs` from the start, as an interval would be (an entry waits half of it on
  // average, not all of it), but with no timer while nothing is gathered.
  const schedule = () => {
    if (timer || closing) return;
    const waitMs = o.delayMs - ((performance.now() - startMs) % o.delayMs);
    timer = setTimeout(() => {
      timer = undefined;
      void flush();
    }, waitMs);
    timer.unref();
  };

  /** After a failed write of `batch`: keeps it before what came meanwhile, or gives it up. */
  function keepOrGiveUp(batch: Map<string, GatheredList<M>>, err: unknown): void {
    const lists = batch.size;
    if (!o.retryFailed) {
      givenUp({ lists, err });
      return;
    }
    const merged = new Map<string, GatheredList<M>>();
    let mergedUnits = 0;
    for (const from of [batch, gathered])
      for (const [key, list] of from) mergedUnits += appendTo(merged, key, list.entries, list.meta, o.cap);
    if (mergedUnits > maxUnits) {
      o.log.error(
        { lists, err },
        `writing ${o.what} failed; too many to keep for the next write: they are lost`,
      );
      return;
    }
    gathered = merged;
    units = mergedUnits;
    failed({ lists, err });
    schedule();
  }

  async function writeGathered(): Promise<void> {
    const batch = gathered;
    gathered = new Map();
    units = 0;
    try {
      await write(batch);
    } catch (err) {
      keepOrGiveUp(batch, err);
    }
  }

  async function flush(): Promise<void> {
    clearTimeout(timer);
    timer = undefined;
    while (writing) await writing;
    if (gathered.size === 0) return;
    writing = writeGathered().finally(() => (writing = undefined));
    await writing;
  }

  async function close(): Promise<void> {
    clearTimeout(timer);
    await flush();
    if (gathered.size > 0)
      o.log.error({ lists: gathered.size }, `the last ${o.what} could not be written: lost at stop`);
  }

  return {
    add(key, entries, meta) {
      if (closing) return;
      units += appendTo(gathered, key, entries, meta, o.cap);
      if (units >= maxUnits) void flush();
      else schedule();
    },
    flush,
    close: () => (closing ??= close()),
  };
}

/** Appends `entries` to `into`'s list `key`, keeping its newest `cap`: answers the units added. */
function appendTo<M>(
  into: Map<string, GatheredList<M>>,
  key: string,
  entries: readonly string[],
  meta: M,
  cap: number,
): number {
  let list = into.get(key);
  if (!list) into.set(key, (list = { meta, entries: [] }));
  let added = 0;
  for (const e of entries) {
    list.entries.push(e);
    added += e.length;
  }
  const over = list.entries.length - cap;
  if (over > 0) for (const e of list.entries.splice(0, over)) added -= e.length;
  return added;
}

/**
 * Writes each of `lists` as LPUSH of its entries (the newest ends up at the head) and LTRIM to
 * `cap`, in one transaction; a key that holds no list is passed over and reported to `notList`.
 */
async function writeCappedLists<M>(
  redis: Redis,
  lists: GatheredLists<M>,
  cap: number,
  notList: (fields: Record<string, unknown>) => void,
): Promise<void> {
  const multi = redis.multi();
  for (const [key, { entries }] of lists) multi.lpush(key, ...entries).ltrim(key, 0, cap - 1);
  const replies = (await multi.exec()) ?? [];
  let refused = 0;
  // Two replies per list: its LPUSH's first.
  for (let i = 0; i < replies.length; i += 2) if (replies[i]![0]) refused += 1;
  if (refused > 0) notList({ lists: refused });
}
