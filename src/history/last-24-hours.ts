/**
 * `last24Hours` (docs/interface.md#history-bucket): hourly buckets of raw values for many data points in one InfluxQL
 * query. Computed from raw values, so the current hour holds everything written so far.
 */
import type { InfluxClient } from './influx-client.ts';
import { anyOfRegex, ident, msTime, str } from './influxql.ts';
import { RAW_RP, READINGS } from './layout.ts';

/** One clock hour of a data point's numeric values. */
export interface Bucket {
  /** Hour start, UNIX seconds. */
  sUTC: number;
  /** sUTC + 3600. */
  eUTC: number;
  count: number;
  total: number;
  max: number;
  min: number;
  avg: number;
}

export interface HistoryItem {
  device: string;
  sensor: string;
}

const HOUR_MS = 3_600_000;

/** Start of the clock hour holding `ms` (epoch ms). */
export const hourStartMs = (ms: number): number => Math.floor(ms / HOUR_MS) * HOUR_MS;

/** The map key of an item: `device|sensor` (neither name can hold `|`). */
export const itemKey = (item: HistoryItem): string => `${item.device}|${item.sensor}`;

/**
 * The query for the last `hours` clock hours up to and including the current one,
 * [currentHour − (hours − 1) h, currentHour + 1 h), of the given items: 24 for all of last24Hours,
 * 1 for the current hour alone.
 */
export function last24HoursQuery(
  env: string,
  items: readonly HistoryItem[],
  nowMs: number,
  hours = 24,
): string {
  const endMs = hourStartMs(nowMs) + HOUR_MS;
  const startMs = endMs - hours * HOUR_MS;
  // Device and sensor regexes select the cross product of the names; unwanted pairs are dropped
  // after the query. One short regex per tag keeps the query small for 1,000 items.
  // No mean(): InfluxDB's mean reducer is sum / count over the same points in the same order, so
  // total / count is the same float, and each aggregate costs influxd ~25 µs per series and query.
  return (
    `SELECT count("value") AS "count", sum("value") AS "total", max("value") AS "max", ` +
    `min("value") AS "min" FROM ${ident(RAW_RP)}.${ident(READINGS)} ` +
    `WHERE "env" = ${str(env)} AND "device" =~ ${anyOfRegex(items.map((i) => i.device))} ` +
    `AND "sensor" =~ ${anyOfRegex(items.map((i) => i.sensor))} ` +
    `AND time >= ${msTime(startMs)} AND time < ${msTime(endMs)} ` +
    `GROUP BY time(1h), "device", "sensor" fill(none)`
  );
}

/**
 * Buckets per item (key `device|sensor`, every item present): one per clock hour with values in the
 * last 24 hours including the current one, oldest first, at most 24. String and GPS data points have
 * no numeric `value` and give []. `hours` = 1 asks for the current hour alone.
 */
export async function queryLast24Hours(
  influx: InfluxClient,
  env: string,
  items: readonly HistoryItem[],
  nowMs: number,
  hours = 24,
): Promise<Map<string, Bucket[]>> {
  const result = new Map<string, Bucket[]>(items.map((i) => [itemKey(i), []]));
  if (items.length === 0) return result;
  const [series] = await influx.query(last24HoursQuery(env, items, nowMs, hours), { method: 'POST' });
  for (const s of series ?? []) {
    const key = itemKey({ device: s.tags?.device ?? '', sensor: s.tags?.sensor ?? '' });
    const buckets = result.get(key);
    if (!buckets) continue;
    const column = (name: string) => s.columns.indexOf(name);
    const [time, count, total, max, min] = ['time', 'count', 'total', 'max', 'min'].map(column);
    const at = (row: unknown[], i: number | undefined) => Number(row[i ?? -1]);
    for (const row of s.values) {
      const sUTC = at(row, time) / 1000;
      const bucket = { count: at(row, count), total: at(row, total) };
      buckets.push({
        sUTC,
        eUTC: sUTC + 3600,
        ...bucket,
        max: at(row, max),
        min: at(row, min),
        avg: bucket.total / bucket.count,
      });
    }
    buckets.sort((a, b) => a.sUTC - b.sUTC);
  }
  return result;
}
