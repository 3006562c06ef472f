/**
 * Export of one data point's raw history (PRODUCT.md §10), oldest first, in pages: memory stays
 * bounded whatever the number of values. The read API formats the values as JSON or CSV.
 */
import type { DataType, DataValue } from '../domain/types.ts';
import type { InfluxClient } from './influx-client.ts';
import { ident, msTime, parseRfc3339Ns, str } from './influxql.ts';
import { RAW_RP, READINGS } from './layout.ts';

export interface ExportQuery {
  env: string;
  device: string;
  sensor: string;
  /** The data point's type: rebuilds rawValue (booleans from 0/1, GPS from lat/lon, text). */
  dataType: DataType;
  /**
   * Inclusive bounds, epoch ms, at millisecond granularity (endMs includes every value of that ms,
   * whatever its sub-ms offset); absent = from the first / up to the last value.
   */
  startMs?: number | undefined;
  endMs?: number | undefined;
  /** Values per InfluxDB query (default 5,000). */
  pageSize?: number;
}

export interface ExportedValue {
  /** Measurement time, epoch ms. */
  timeMs: number;
  value: DataValue;
}

const DEFAULT_PAGE_SIZE = 5000;

/**
 * Yields the values of one data point oldest first. Pages follow a nanosecond time cursor (RFC 3339
 * times, exact); values sharing the cursor's nanosecond (two series of one sensor after a type
 * change) are counted and skipped, never lost or repeated.
 */
export async function* exportValues(influx: InfluxClient, q: ExportQuery): AsyncGenerator<ExportedValue> {
  const pageSize = q.pageSize ?? DEFAULT_PAGE_SIZE;
  const base =
    `SELECT "value", "text", "lat", "lon" FROM ${ident(RAW_RP)}.${ident(READINGS)} ` +
    `WHERE "env" = ${str(q.env)} AND "device" = ${str(q.device)} AND "sensor" = ${str(q.sensor)}` +
    (q.endMs === undefined ? '' : ` AND time < ${msTime(q.endMs + 1)}`);
  let cursor: { ns: bigint; seen: number } | undefined;
  for (;;) {
    const from =
      cursor === undefined
        ? q.startMs === undefined
          ? ''
          : ` AND time >= ${msTime(q.startMs)}`
        : ` AND time >= ${cursor.ns.toString()}`;
    // Room for the rows at the cursor that the previous page yielded already, plus a full page.
    const limit = pageSize + (cursor?.seen ?? 0);
    const [series] = await influx.query(`${base}${from} ORDER BY time ASC LIMIT ${limit}`, {
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
      const value = rebuildValue(q.dataType, row, s?.columns ?? []);
      if (value !== undefined) yield { timeMs: Number(ns / 1_000_000n), value };
    }
    if (rows.length < limit) return;
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
