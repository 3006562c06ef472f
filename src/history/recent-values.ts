/**
 * The raw numeric values of a device's data points over the last hours, for the console's charts:
 * one InfluxQL query per device, at most `maxPerSensor` values per data point (the newest), oldest
 * first. Text and GPS values have no numeric `value` and give nothing.
 */
import type { InfluxClient } from './influx-client.ts';
import { anyOfRegex, ident, msTime, str } from './influxql.ts';
import { RAW_RP, READINGS } from './layout.ts';

/** Times (epoch ms) and values of one data point, oldest first. */
export interface ValueSeries {
  timesMs: number[];
  values: number[];
}

export async function queryRecentValues(
  influx: InfluxClient,
  q: { env: string; device: string; sensors: readonly string[]; sinceMs: number; maxPerSensor: number },
): Promise<Map<string, ValueSeries>> {
  const out = new Map<string, ValueSeries>(q.sensors.map((s) => [s, { timesMs: [], values: [] }]));
  if (q.sensors.length === 0) return out;
  const text =
    `SELECT "value" FROM ${ident(RAW_RP)}.${ident(READINGS)} ` +
    `WHERE "env" = ${str(q.env)} AND "device" = ${str(q.device)} ` +
    `AND "sensor" =~ ${anyOfRegex(q.sensors)} AND time >= ${msTime(q.sinceMs)} ` +
    `GROUP BY "sensor" ORDER BY time DESC LIMIT ${Math.max(1, Math.trunc(q.maxPerSensor))}`;
  const [series] = await influx.query(text, { method: 'POST' });
  for (const s of series ?? []) {
    const target = out.get(s.tags?.sensor ?? '');
    if (!target) continue;
    for (let i = s.values.length - 1; i >= 0; i--) {
      const [t, v] = s.values[i] ?? [];
      if (typeof t === 'number' && typeof v === 'number') {
        target.timesMs.push(t);
        target.values.push(v);
      }
    }
  }
  return out;
}
