/**
 * `last24Hours` for the read API (docs/interface.md#history-bucket) at rates where one InfluxDB
 * query per request is too dear: the closed hours of each data point are cached; the current hour
 * comes from the state in Redis when the caller has it (ReaderItem.current), else it is queried for
 * every request; requests that arrive while a query runs share the next one.
 *
 * Freshness: the current hour from state holds every value that became the data point's current
 * value; queried, it holds every value written to InfluxDB before the request arrived (a request
 * never takes the answer of a query that started before it). Closed hours are cached per history
 * version (ReaderItem.version, which the worker bumps once it has written a value into a closed
 * hour, src/state/history-version.ts): a late value shows at the first request that reads the new
 * version, in every API process. They are also reused for at most `closedHoursMaxAgeMs` (60 s),
 * for values written without a version bump (by a process of an earlier release during an
 * upgrade). The hour rolling over starts a fresh entry. At most `maxEntries` data points are kept
 * (10,000, about 2.5 KB each at 23 buckets), the oldest entry dropped first.
 */
import type { InfluxClient } from './influx-client.ts';
import { hourStartMs, itemKey, queryLast24Hours, type Bucket, type HistoryItem } from './last-24-hours.ts';

/** Default of `closedHoursMaxAgeMs`: how stale a closed hour of last24Hours may be. */
export const CLOSED_HOURS_MAX_AGE_MS = 60_000;
/** Default of `maxEntries`: data points whose closed hours are kept. */
export const CLOSED_HOURS_MAX_ENTRIES = 10_000;

export interface Last24HoursReaderOptions {
  influx: InfluxClient;
  /** How long the closed hours of a data point are reused, in ms; 60,000 by default. */
  closedHoursMaxAgeMs?: number;
  /** Most data points whose closed hours are kept; 10,000 by default. */
  maxEntries?: number;
}

/**
 * A data point to read. `current`, when the caller knows it (the current hour kept in state, see
 * STATE_FIELD.packed), is the current hour's bucket (null: no values in it), and InfluxDB is not
 * asked for the current hour. `version`, the device's history version read with that state, keys
 * the cached closed hours: under another version they are asked again.
 */
export interface ReaderItem extends HistoryItem {
  current?: Bucket | null;
  version?: number;
}

/** Buckets per item, as queryLast24Hours gives them (key `device|sensor`, every item present). */
export type Last24HoursReader = (
  env: string,
  items: readonly ReaderItem[],
  nowMs: number,
) => Promise<Map<string, Bucket[]>>;

/** The closed hours of one data point: the 23 hours before `hourMs`. */
interface ClosedHours {
  /** The current hour (epoch ms) when they were asked for. */
  hourMs: number;
  /** The clock of the request that asked for them (epoch ms). */
  askedMs: number;
  /** The history version of the request that asked for them. */
  version: number | undefined;
  buckets: Promise<Bucket[]>;
}

export function createLast24HoursReader(opts: Last24HoursReaderOptions): Last24HoursReader {
  const maxAgeMs = opts.closedHoursMaxAgeMs ?? CLOSED_HOURS_MAX_AGE_MS;
  const maxEntries = opts.maxEntries ?? CLOSED_HOURS_MAX_ENTRIES;
  const closed = new Map<string, ClosedHours>();
  const ask = createQueryBatcher(opts.influx);

  /** Caches `entry`; Map order is insertion order, so the first key is the oldest entry. */
  function remember(key: string, entry: ClosedHours): void {
    closed.delete(key);
    closed.set(key, entry);
    if (closed.size > maxEntries) closed.delete(closed.keys().next().value ?? '');
  }

  function bucketsOf(env: string, item: ReaderItem, hourMs: number, nowMs: number): Promise<Bucket[]> {
    const key = itemKey(item);
    const cacheKey = `${env}\n${key}`;
    const hit = closed.get(cacheKey);
    const known = item.current === undefined ? undefined : item.current ? [item.current] : [];
    if (hit && hit.hourMs === hourMs && hit.version === item.version && nowMs - hit.askedMs < maxAgeMs) {
      if (known) return hit.buckets.then((c) => c.concat(known));
      const current = ask(env, hourMs, 1, item);
      return Promise.all([hit.buckets, current]).then(([c, now]) => c.concat(now.get(key) ?? []));
    }
    const asked = ask(env, hourMs, 24, item).then((m) => m.get(key) ?? []);
    const all = known ? asked.then((b) => b.filter((x) => x.sUTC * 1000 < hourMs).concat(known)) : asked;
    const entry: ClosedHours = {
      hourMs,
      askedMs: nowMs,
      version: item.version,
      buckets: asked.then((b) => b.filter((x) => x.sUTC * 1000 < hourMs)),
    };
    // A failed query is not cached: the next request asks again.
    entry.buckets.catch(() => {
      if (closed.get(cacheKey) === entry) closed.delete(cacheKey);
    });
    remember(cacheKey, entry);
    return all;
  }

  return async (env, items, nowMs) => {
    const hourMs = hourStartMs(nowMs);
    const buckets = await Promise.all(items.map((item) => bucketsOf(env, item, hourMs, nowMs)));
    return new Map(items.map((item, i) => [itemKey(item), buckets[i] ?? []]));
  };
}

/** Items waiting for the next query of one environment, hour and range. */
interface Group {
  env: string;
  hourMs: number;
  hours: 1 | 24;
  items: Map<string, HistoryItem>;
  answer: Promise<Map<string, Bucket[]>>;
  settle: (query: Promise<Map<string, Bucket[]>>) => void;
}

/**
 * Shares queries among requests: items asked for while no query runs go out together on the next
 * turn of the event loop; items asked for while one runs wait for it to end and go out together then.
 * Each query starts after every request whose items it carries.
 */
function createQueryBatcher(influx: InfluxClient) {
  let waiting = new Map<string, Group>();
  let running = false;
  let scheduled = false;

  function schedule(): void {
    if (running || scheduled || waiting.size === 0) return;
    scheduled = true;
    setImmediate(() => {
      scheduled = false;
      void flush();
    });
  }

  async function flush(): Promise<void> {
    const groups = [...waiting.values()];
    waiting = new Map();
    running = true;
    const queries = groups.map((g) => {
      const query = queryLast24Hours(influx, g.env, [...g.items.values()], g.hourMs, g.hours);
      g.settle(query);
      // Its waiters get the failure through settle; here it only ends the batch.
      return query.catch(() => undefined);
    });
    await Promise.all(queries);
    running = false;
    schedule();
  }

  return (env: string, hourMs: number, hours: 1 | 24, item: HistoryItem): Promise<Map<string, Bucket[]>> => {
    const groupKey = `${hours}\n${hourMs}\n${env}`;
    let group = waiting.get(groupKey);
    if (!group) {
      let settle!: Group['settle'];
      const answer = new Promise<Map<string, Bucket[]>>((resolve) => {
        settle = resolve;
      });
      group = { env, hourMs, hours, items: new Map(), answer, settle };
      waiting.set(groupKey, group);
    }
    group.items.set(itemKey(item), item);
    schedule();
    return group.answer;
  };
}
