/**
 * Durations written the way people write them: `500ms`, `5s`, `30m`, `2h`, `1d`, `1w`. A bare
 * whole number is milliseconds (so a value printed as a number reads back the same).
 */
const UNIT_MS: Record<string, number> = { ms: 1, s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** Milliseconds of `text`, or undefined when it is not a duration. */
export function parseDurationMs(text: string): number | undefined {
  const m = /^(\d+)(ms|s|m|h|d|w)?$/.exec(text.trim());
  if (!m) return undefined;
  const ms = Number(m[1]) * (UNIT_MS[m[2] ?? 'ms'] ?? 1);
  return Number.isSafeInteger(ms) ? ms : undefined;
}

/** The shortest exact writing of `ms` (`3600000` → `1h`, `1500` → `1500ms`). */
export function formatDurationMs(ms: number): string {
  for (const unit of ['w', 'd', 'h', 'm', 's'] as const) {
    const size = UNIT_MS[unit] ?? 1;
    if (ms >= size && ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
