/**
 * The two conditions that wait (docs/domain.md#conditions-that-wait): a rule with `for`, whose
 * status is entered only once its condition has held that long in measurement time, and `stale`,
 * the status of a data point that has had no value for a while. Their durations, how they read in
 * event messages, and which rules of a value are waiting. Pure: no I/O.
 */
import { parseDurationMs } from '../lib/duration.ts';
import type { RuleStatus, StaleRule, ThresholdSet } from './types.ts';

const RULE_STATUSES: readonly RuleStatus[] = ['INFO', 'WARNING', 'ERROR', 'CRITICAL'];
/** The longest a condition may wait: past it, a status would hang on a single old value. */
export const LONGEST_WAIT_MS = 30 * 86_400_000;
const STALE_KEYS = new Set(['after', 'status']);

/**
 * Milliseconds of a condition's duration (`90s`, `10m`, `2h`, `1d`; `500ms` too), or what is wrong
 * with it. A bare number is refused: `for: 10` could mean seconds or minutes.
 */
export function parseConditionDuration(input: unknown): { ms: number } | { wrong: string } {
  const example = 'a duration like 90s, 10m or 2h';
  if (typeof input !== 'string' || !/[a-z]\s*$/i.test(input)) {
    return { wrong: `must be ${example}, got ${JSON.stringify(input) ?? 'nothing'}` };
  }
  const ms = parseDurationMs(input);
  if (ms === undefined) return { wrong: `must be ${example}, got ${JSON.stringify(input)}` };
  if (ms <= 0) return { wrong: `must be longer than 0, got ${JSON.stringify(input)}` };
  if (ms > LONGEST_WAIT_MS) return { wrong: `must be at most 30d, got ${JSON.stringify(input)}` };
  return { ms };
}

/** `{after: 30m, status: WARNING}` as a StaleRule, or what is wrong with it (path below `stale`). */
export function checkStaleRule(
  input: unknown,
): { rule: StaleRule } | { path: (string | number)[]; message: string } {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return { path: [], message: 'must be an object like {after: 30m, status: WARNING}' };
  }
  const raw = input as Record<string, unknown>;
  const unknown = Object.keys(raw).filter((k) => !STALE_KEYS.has(k));
  if (unknown.length > 0) {
    return {
      path: [],
      message: `unknown field ${unknown.map((k) => `"${k}"`).join(', ')} (expected after, status)`,
    };
  }
  const after = parseConditionDuration(raw.after);
  if ('wrong' in after) return { path: ['after'], message: after.wrong };
  const status = raw.status ?? 'WARNING';
  if (!RULE_STATUSES.includes(status as RuleStatus)) {
    return {
      path: ['status'],
      message: `must be one of ${RULE_STATUSES.join(', ')}, got ${JSON.stringify(status)}`,
    };
  }
  return { rule: { afterMs: after.ms, status: status as RuleStatus } };
}

/** A duration as event messages say it: `10 min`, `2 h`, `90 s`, `500 ms`. */
export function describeDuration(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}

/** `No value for 30 min`: the text of a stale event. */
export const staleEventText = (stale: StaleRule): string => `No value for ${describeDuration(stale.afterMs)}`;

/** Whether any rule of the set waits (`for`) or the set has a stale rule: its state keeps timers. */
export const hasTimers = (set: ThresholdSet): boolean =>
  set.stale !== undefined || set.rules.some((r) => r.forMs !== undefined);
