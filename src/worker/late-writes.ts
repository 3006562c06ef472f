/**
 * The history step's part in keeping readers exact when values arrive late: once a step's values
 * are in InfluxDB, the acknowledgement of the step also
 * - bumps the history version of each device with a value in a clock hour that had closed (the
 *   read API's cached closed hours are kept per version, src/state/history-version.ts), and
 * - marks each (data point, hour) with a numeric value older than the rollup query's window, for a
 *   rollup job to recompute (src/history/late-hours.ts).
 * Both depend on when the write completed, so the step is summarised before it (keeping no payload
 * alive during the write) and the commands are made after it. Without late values a step adds no
 * command and no work per value: values are sorted by time, so each device costs one comparison of
 * its oldest value before the write and one after.
 */
import { randomBytes } from 'node:crypto';
import type { HistoryKeys } from '../history/history-keys.ts';
import { hourStartMs } from '../history/last-24-hours.ts';
import { lateHourField, markLateHours, rollupWindowStartMs } from '../history/late-hours.ts';
import type { RedisCommand } from '../redis/command.ts';
import { bumpHistoryVersion } from '../state/history-version.ts';
import type { StateKeys } from '../state/state-keys.ts';
import type { DeviceReadings } from '../state/state-store.ts';

/**
 * How far the clocks of the worker, the read API and InfluxDB may be apart, in ms: a value is taken
 * as late when it would be for a clock this far ahead.
 */
const CLOCK_SKEW_MS = 5_000;
/**
 * A step's history write completes within this long of the step's start, or fails (InfluxDB
 * requests time out) and the step is processed again: the bound for values that may turn out late.
 */
const WRITE_HORIZON_MS = 3_600_000;

export interface LateWritesOptions {
  keys: StateKeys & HistoryKeys;
  /** The rollup query's RESAMPLE EVERY (VIGIL_ROLLUP_RESAMPLE_EVERY), ms. */
  resampleEveryMs: number;
}

/** What a step needs of its devices. */
export type WrittenDevice = Pick<DeviceReadings, 'env' | 'device' | 'values'>;

/** The commands that record a step's late values, given when its history write completed. */
export type LateWriteCommands = (writtenMs: number) => RedisCommand[];

/** Summarises the devices a step writes, at the step's start `nowMs`. */
export type LateWrites = (devices: readonly WrittenDevice[], nowMs: number) => LateWriteCommands;

export function createLateWrites(opts: LateWritesOptions): LateWrites {
  const { keys, resampleEveryMs } = opts;
  return (devices, nowMs) => {
    // Per device: env, device and its oldest value's time (values are sorted by time).
    const oldest: (string | number)[] = [];
    /** Late-hour field → hour start, for numeric values that may turn out older than the window. */
    const candidates = new Map<string, number>();
    const bound = rollupWindowStartMs(nowMs + WRITE_HORIZON_MS + CLOCK_SKEW_MS, resampleEveryMs);
    for (const { env, device, values } of devices) {
      const first = values[0];
      if (!first) continue;
      oldest.push(env, device, first.timeMs);
      for (const v of values) {
        if (v.timeMs >= bound) break;
        if (v.number === null) continue;
        const hourMs = hourStartMs(v.timeMs);
        candidates.set(lateHourField({ env, device, sensor: v.sensor, hourMs }), hourMs);
      }
    }
    return (writtenMs) => {
      const commands: RedisCommand[] = [];
      const closedBefore = hourStartMs(writtenMs + CLOCK_SKEW_MS);
      for (let i = 0; i < oldest.length; i += 3) {
        if ((oldest[i + 2] as number) < closedBefore)
          commands.push(bumpHistoryVersion(keys, oldest[i] as string, oldest[i + 1] as string));
      }
      const windowStart = rollupWindowStartMs(writtenMs + CLOCK_SKEW_MS, resampleEveryMs);
      const late: string[] = [];
      for (const [field, hourMs] of candidates) if (hourMs < windowStart) late.push(field);
      if (late.length > 0) commands.push(markLateHours(keys, late, randomBytes(9).toString('base64url')));
      return commands;
    };
  };
}
