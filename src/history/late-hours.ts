/**
 * Late hours: clock hours of a data point that received values after the rollup continuous query
 * last recomputed them (schema.ts: each run recomputes the hours of its last ROLLUP_CQ_FOR). The
 * worker marks them in one Redis hash with the acknowledgement of the step that wrote the values,
 * and rollup jobs recompute exactly those hours from raw values (rollup-repair.ts).
 */
import { parseDurationMs } from '../lib/duration.ts';
import type { RedisCommand } from '../redis/command.ts';
import type { HistoryKeys } from './history-keys.ts';
import { hourStartMs } from './last-24-hours.ts';
import { ROLLUP_CQ_FOR } from './layout.ts';

/** One clock hour of one data point. */
export interface LateHour {
  env: string;
  device: string;
  sensor: string;
  /** Start of the clock hour, epoch ms. */
  hourMs: number;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
const CQ_FOR_MS = parseDurationMs(ROLLUP_CQ_FOR) ?? 2 * HOUR_MS;

/**
 * The start of the oldest hour that the rollup query's next run after `writtenMs` recomputes:
 * values of earlier hours written at `writtenMs` never reach the rollups by the query. InfluxDB runs
 * it at multiples of RESAMPLE EVERY (when that divides a day; else up to one interval later) over
 * [hour of (run − FOR + 1 h − 1 ns), run).
 */
export function rollupWindowStartMs(writtenMs: number, resampleEveryMs: number): number {
  const nextRunMs =
    DAY_MS % resampleEveryMs === 0
      ? Math.ceil(writtenMs / resampleEveryMs) * resampleEveryMs
      : writtenMs + resampleEveryMs;
  return hourStartMs(nextRunMs + HOUR_MS - CQ_FOR_MS - 1);
}

/** The hash field of a late hour (names cannot hold a newline: they are validated on creation). */
export const lateHourField = (h: LateHour): string => `${h.env}\n${h.device}\n${h.sensor}\n${h.hourMs}`;

/** The late hour of a hash field, or null for a field of another shape. */
export function parseLateHourField(field: string): LateHour | null {
  const parts = field.split('\n');
  if (parts.length !== 4) return null;
  const [env, device, sensor, hour] = parts as [string, string, string, string];
  const hourMs = Number(hour);
  if (!Number.isSafeInteger(hourMs) || hourMs % HOUR_MS !== 0) return null;
  return { env, device, sensor, hourMs };
}

/**
 * The command that marks `fields` late with `token` (unique to the marking step): a rollup job
 * removes a mark only if it still holds the token it read before recomputing, so a value written
 * during its run marks the hour again and is not lost.
 */
export function markLateHours(keys: HistoryKeys, fields: readonly string[], token: string): RedisCommand {
  return ['HSET', keys.lateHours(), ...fields.flatMap((f) => [f, token])];
}
