/**
 * Timestamps as the API and the event messages show them.
 */

/** ISO 8601 in UTC with milliseconds (`2026-11-22T05:45:21.000Z`), or null for a missing time. */
export function isoUtc(ms: number | null | undefined): string | null {
  if (ms === null || ms === undefined || !Number.isFinite(ms)) return null;
  const date = new Date(ms);
  // Dates beyond ±8.64e15 ms are invalid and toISOString would throw.
  return Number.isNaN(date.getTime()) ? null : date.toISOString();
}
