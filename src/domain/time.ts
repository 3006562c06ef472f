/**
 * Timestamps as the API and the event messages show them.
 */

const DAY_MS = 86_400_000;
/** Year 10000: from here on toISOString writes six-digit years. */
const YEAR_10000_MS = 253_402_300_800_000;
const pad = (width: number) => (_: unknown, i: number) => String(i).padStart(width, '0');
const TWO_DIGITS = Array.from({ length: 100 }, pad(2));
const THREE_DIGITS = Array.from({ length: 1000 }, pad(3));
/** `YYYY-MM-DDT` per day number (days since the epoch); cleared when it grows past MAX_DAYS. */
const dayPrefixes = new Map<number, string>();
const MAX_DAYS = 4096;

/** ISO 8601 in UTC with milliseconds (`2026-11-22T05:45:21.000Z`), or null for a missing time. */
export function isoUtc(ms: number | null | undefined): string | null {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return null;
  // The read API writes thousands of these per batch request, and Date#toISOString is slow: the
  // date part is built once per day, the time of day from integers. Anything unusual goes to Date.
  if (!Number.isInteger(ms) || ms < 0 || ms >= YEAR_10000_MS) return viaDate(ms);
  const day = Math.floor(ms / DAY_MS);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    if (dayPrefixes.size >= MAX_DAYS) dayPrefixes.clear();
    prefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    dayPrefixes.set(day, prefix);
  }
  let rest = ms - day * DAY_MS;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  const millis = rest - seconds * 1000;
  return `${prefix}${TWO_DIGITS[hours]}:${TWO_DIGITS[minutes]}:${TWO_DIGITS[seconds]}.${THREE_DIGITS[millis]}Z`;
}

function viaDate(ms: number): string | null {
  const date = new Date(ms);
  // Dates beyond ±8.64e15 ms are invalid and toISOString would throw.
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}
