/**
 * The monthly export allowance of sensors/export: at most VIGIL_EXPORT_LIMIT_PER_MONTH exports per
 * environment and data point per calendar month (UTC), 0 = unlimited. An export takes its place in
 * one Redis script before it streams, so however many arrive at once no more start than the limit
 * allows; one that does not complete gives its place back, so only completed exports count.
 * Counted in `ExportKeys.exports(env, 'YYYY-MM')`, field `<device>|<sensor>`, kept 40 days.
 */
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import type { ExportKeys } from './export-keys.ts';

/** Kept a little beyond the month it counts. */
const KEEP_SECONDS = 40 * 24 * 3600;

/**
 * KEYS[1]: the month's counts; ARGV[1]: the field, ARGV[2]: the limit, ARGV[3]: seconds to keep
 * them. Takes one export and returns 1, or takes nothing and returns 0 when the allowance is used.
 */
const RESERVE_EXPORT = `
local used = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
if used >= tonumber(ARGV[2]) then return 0 end
redis.call('HINCRBY', KEYS[1], ARGV[1], 1)
redis.call('EXPIRE', KEYS[1], tonumber(ARGV[3]))
return 1`;

/** KEYS[1]: the month's counts; ARGV[1]: the field. Gives one export back; a count of 0 is removed. */
const RELEASE_EXPORT = `
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if left <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
return left`;

/** An export's place in the allowance, held until it completes. */
export interface ExportReservation {
  /** Gives the place back: the export did not complete. Safe to call more than once. */
  release(): Promise<void>;
}

export interface ExportAllowance {
  /** Takes an export of `item` (`<device>|<sensor>`) this month; EXPORT_LIMIT_REACHED when used up. */
  reserve(env: string, item: string, nowMs: number): Promise<ExportReservation>;
}

export function createExportAllowance(deps: {
  redis: Redis;
  keys: ExportKeys;
  /** Exports per data point and month; 0 = unlimited. */
  limitPerMonth: number;
}): ExportAllowance {
  const { redis, keys, limitPerMonth } = deps;
  const unlimited: ExportReservation = { release: () => Promise.resolve() };
  return {
    async reserve(env, item, nowMs) {
      if (limitPerMonth === 0) return unlimited;
      const key = keys.exports(env, new Date(nowMs).toISOString().slice(0, 7));
      const taken = Number(await redis.eval(RESERVE_EXPORT, 1, key, item, limitPerMonth, KEEP_SECONDS));
      if (taken !== 1) throw limitReached(nowMs);
      let released: Promise<void> | undefined;
      return {
        release: () => (released ??= redis.eval(RELEASE_EXPORT, 1, key, item).then(() => undefined)),
      };
    },
  };
}

function limitReached(nowMs: number): AppError {
  const now = new Date(nowMs);
  const nextMs = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  const nextAllowedUTC = new Date(nextMs).toISOString();
  return new AppError(
    'EXPORT_LIMIT_REACHED',
    `The export allowance of this data point for this month is used; next export allowed from ${nextAllowedUTC}.`,
    { retryAfterSeconds: Math.ceil((nextMs - nowMs) / 1000), details: { nextAllowedUTC } },
  );
}
