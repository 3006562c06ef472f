/** Small statistics helpers for the benchmark: medians and percentiles of plain number lists. */

/** The p-th percentile (0..100) by nearest rank; NaN for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export const median = (values: readonly number[]): number => percentile(values, 50);

/** Median of each numeric field over several runs of the same measurement. */
export function medianOf<T extends Record<string, number>>(runs: readonly T[]): T {
  const first = runs[0];
  if (!first) throw new Error('medianOf needs at least one run');
  const out: Record<string, number> = {};
  for (const key of Object.keys(first)) out[key] = median(runs.map((r) => r[key] ?? Number.NaN));
  return out as T;
}

export const round = (n: number, digits = 0): number => {
  const f = 10 ** digits;
  return Math.round(n * f) / f;
};
