/**
 * Export of one data point's history (docs/interface.md#sensors-export), oldest first, in pages: memory stays bounded
 * whatever the number of values. Raw values where raw retention still holds them; before that
 * (raw expired, rollups kept longer) the hourly averages of the rollup policy, marked `hourly`.
 * The read API formats the values as JSON or CSV.
 */
import type { DataType, DataValue } from '../domain/types.ts';
import type { InfluxClient } from './influx-client.ts';
import { ident, msTime, parseRfc3339Ns, str } from './influxql.ts';
import { LONG_RP, RAW_RP, READINGS, READINGS_HOURLY } from './layout.ts';

export interface ExportQuery {
  env: string;
  device: string;
  sensor: string;
  /** The data point's type: rebuilds rawValue (booleans from 0/1, GPS from lat/lon, text). */
  dataType: DataType;
  /**
   * Inclusive bounds, epoch ms, at millisecond granularity (endMs includes every value of that ms,
   * whatever its sub-ms offset); absent = from the first / up to the last value. Any non-negative
   * time up to year 9999 may be given.
   */
  startMs?: number | undefined;
  endMs?: number | undefined;
  /** Values per InfluxDB query (default 5,000). */
  pageSize?: number;
}

export interface ExportedValue {
  /** Measurement time, epoch ms (for an hourly value: the hour's start). */
  timeMs: number;
  value: DataValue;
  /** True for an hourly average from the rollups, exported where raw values have expired. */
  hourly?: true;
}

const DEFAULT_PAGE_SIZE = 5000;
/**
 * The latest time InfluxDB represents (int64 ns: 2262-04-11T23:47:16.854Z), in ms; a later bound
 * is an invalid query there, and no value can lie beyond it, so bounds are cut to it.
 */
const MAX_TIME_MS = 9_223_372_036_854;
const HOUR_MS = 3_600_000;

/** Yields the values of one data point oldest first: hourly rollups before the raw data, then raw. */
export async function* exportValues(influx: InfluxClient, q: ExportQuery): AsyncGenerator<ExportedValue> {
  const series = `"env" = ${str(q.env)} AND "device" = ${str(q.device)} AND "sensor" = ${str(q.sensor)}`;
  const start = q.startMs === undefined ? '' : ` AND time >= ${msTime(Math.min(q.startMs, MAX_TIME_MS))}`;
  const end = q.endMs === undefined ? '' : ` AND time < ${msTime(Math.min(q.endMs + 1, MAX_TIME_MS))}`;
  const raw = `FROM ${ident(RAW_RP)}.${ident(READINGS)} WHERE ${series}${start}${end}`;
  if (hasRollups(q.dataType)) {
    // Rollups only for the hours before the first raw value still kept (expired by raw retention).
    const firstRawMs = await firstTimeMs(influx, `SELECT "value" ${raw}`);
    const rollupEnd =
      firstRawMs === undefined ? end : ` AND time < ${msTime(Math.floor(firstRawMs / HOUR_MS) * HOUR_MS)}`;
    const hourly = `FROM ${ident(LONG_RP)}.${ident(READINGS_HOURLY)} WHERE ${series}${start}${rollupEnd}`;
    for await (const { ns, row } of pagedRows(influx, `SELECT "avg" ${hourly}`, q.pageSize)) {
      if (typeof row[1] === 'number') yield { timeMs: Number(ns / 1_000_000n), value: row[1], hourly: true };
    }
  }
  const select = `SELECT "value", "text", "lat", "lon" ${raw}`;
  for await (const { ns, row, columns } of pagedRows(influx, select, q.pageSize)) {
    const value = rebuildValue(q.dataType, row, columns);
    if (value !== undefined) yield { timeMs: Number(ns / 1_000_000n), value };
  }
}

/**
 * Streams the export into `sink` (awaited per value, so a slow client applies back-pressure).
 * Returns the number of values.
 */
export async function streamExport(
  influx: InfluxClient,
  q: ExportQuery,
  sink: (value: ExportedValue) => void | Promise<void>,
): Promise<number> {
  let n = 0;
  for await (const v of exportValues(influx, q)) {
    await sink(v);
    n++;
  }
  return n;
}

/** Numeric types have hourly rollups; a boolean's hourly average is no boolean, strings/GPS have none. */
function hasRollups(dataType: DataType): boolean {
  return dataType !== 'string' && dataType !== 'gps' && dataType !== 'boolean';
}

async function firstTimeMs(influx: InfluxClient, select: string): Promise<number | undefined> {
  const [series] = await influx.query(`${select} ORDER BY time ASC LIMIT 1`, { method: 'POST' });
  const t = series?.[0]?.values[0]?.[0];
  return typeof t === 'number' ? t : undefined;
}

/**
 * Rows of `select` (which must end with its WHERE clause) oldest first, page by page. Pages follow
 * a nanosecond time cursor (RFC 3339 times, exact). Rows sharing the cursor's nanosecond (two
 * series of one sensor after a type change) are counted and skipped on the next page, and the
 * page's LIMIT grows by that count: never lost, repeated or looping.
 */
async function* pagedRows(
  influx: InfluxClient,
  select: string,
  pageSize = DEFAULT_PAGE_SIZE,
): AsyncGenerator<{ ns: bigint; row: unknown[]; columns: string[] }> {
  let cursor: { ns: bigint; seen: number } | undefined;
  for (;;) {
    const from = cursor === undefined ? '' : ` AND time >= ${cursor.ns.toString()}`;
    const limit = pageSize + (cursor?.seen ?? 0);
    const [series] = await influx.query(`${select}${from} ORDER BY time ASC LIMIT ${limit}`, {
      epoch: 'rfc3339',
      method: 'POST',
    });
    const s = series?.[0];
    const rows = s?.values ?? [];
    let skip = cursor?.seen ?? 0;
    for (const row of rows) {
      const ns = parseRfc3339Ns(String(row[0]));
      if (cursor && ns === cursor.ns && skip > 0) {
        skip--;
        continue;
      }
      cursor = cursor && ns === cursor.ns ? { ns, seen: cursor.seen + 1 } : { ns, seen: 1 };
      yield { ns, row, columns: s?.columns ?? [] };
    }
    if (rows.length < limit) return;
  }
}

/** rawValue from the stored fields; undefined when the row does not hold this type's field. */
function rebuildValue(dataType: DataType, row: unknown[], columns: string[]): DataValue | undefined {
  const field = (name: string): unknown => row[columns.indexOf(name)];
  const num = (name: string): number | undefined => {
    const v = field(name);
    return typeof v === 'number' ? v : undefined;
  };
  switch (dataType) {
    case 'string': {
      const text = field('text');
      return typeof text === 'string' ? text : undefined;
    }
    case 'gps': {
      const lat = num('lat');
      const lon = num('lon');
      return lat === undefined || lon === undefined ? undefined : { lat, lon };
    }
    case 'boolean': {
      const v = num('value');
      return v === undefined ? undefined : v !== 0;
    }
    case 'integer':
    case 'number':
    case 'temperature':
    case 'humidity':
    case 'illuminance':
    case 'millivolts':
    case 'co2':
    case 'occupancy':
      return num('value');
  }
}
