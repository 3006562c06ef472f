/**
 * Redis keys of history upkeep: the hours whose hourly rollups wait to be recomputed, and the
 * BullMQ queue that recomputes them (late-hours.ts, rollup-repair.ts).
 */
export interface HistoryKeys {
  readonly prefix: string;
  /**
   * Hash of the hours whose rollups wait to be recomputed: field `<env>\n<device>\n<sensor>\n<hour
   * start ms>` (lateHourField), value the token of the step that marked it last.
   */
  lateHours(): string;
  /** BullMQ prefix of the rollup queue (`rollups`); the notification queue shares it. */
  rollupJobsPrefix(): string;
}

export function historyKeys(prefix: string): HistoryKeys {
  const p = prefix;
  return {
    prefix: p,
    lateHours: () => `${p}:rollups:late`,
    rollupJobsPrefix: () => `${p}:bull`,
  };
}
