/** Retry delay of attempt `attemptsMade` (1 = first retry): doubling from `baseMs`, at most `maxMs`. */
export function cappedBackoff(attemptsMade: number, baseMs: number, maxMs: number): number {
  return Math.min(maxMs, baseMs * 2 ** Math.min(Math.max(attemptsMade - 1, 0), 30));
}
