/**
 * Threshold rules and the status of a value (docs/domain.md#thresholds-and-statuses): the most severe matching rule wins
 * (CRITICAL > ERROR > WARNING > INFO, ties to the first in list order), else SUCCESS; hysteresis
 * keeps a data point in a status entered through `above` / `below` until the value is clearly back.
 */
import { sha256Hex } from '../lib/sha256.ts';
import { AppError } from '../errors/app-error.ts';
import { checkStaleRule, parseConditionDuration } from './alarm-conditions.ts';
import { convertValue, isNumericDataType } from './data-types.ts';
import { STATUSES } from './types.ts';
import type {
  DataType,
  DataValue,
  RuleStatus,
  StaleRule,
  Status,
  ThresholdRule,
  ThresholdSet,
} from './types.ts';
import { formatDurationMs } from '../lib/duration.ts';

/** The result of evaluating a value: its status and the rule that set it (-1 = SUCCESS). */
export interface StatusOutcome {
  status: Status;
  ruleIndex: number;
}

const RULE_STATUSES: readonly RuleStatus[] = ['INFO', 'WARNING', 'ERROR', 'CRITICAL'];
const LIMIT_KINDS = ['above', 'below', 'equals'] as const;
const RULE_KEYS = new Set(['status', ...LIMIT_KINDS, 'description', 'for']);
const DESCRIPTION_MAX = 200;

/** A problem in a threshold set: where (path below the set, e.g. ['rules', 1, 'above']) and what. */
export interface ThresholdProblem {
  path: (string | number)[];
  message: string;
}

/** What a threshold set is made of, as written: rules, hysteresis, stale. */
export interface ThresholdInput {
  rules: unknown;
  hysteresis?: unknown;
  stale?: unknown;
}

/**
 * Validates rules (with their `for`), hysteresis and the stale rule for a data point of
 * `dataType`; `equals` values are stored converted to the type ("on" → true for a boolean).
 * Throws INVALID_INPUT naming the rule.
 */
export function parseThresholdSet(input: ThresholdInput, dataType: DataType): ThresholdSet {
  const result = checkThresholdSet(input, dataType);
  if (result.ok) return result.value;
  const where = result.problem.path.map((p, i) => (typeof p === 'number' ? `[${p}]` : i === 0 ? p : `.${p}`));
  throw new AppError('INVALID_INPUT', `invalid thresholds: ${where.join('')}: ${result.problem.message}`);
}

/** parseThresholdSet without the throw, for callers that put the problem in their own words. */
export function checkThresholdSet(
  input: ThresholdInput,
  dataType: DataType,
): { ok: true; value: ThresholdSet } | { ok: false; problem: ThresholdProblem } {
  const { rules, hysteresis, stale } = input;
  let h = 0;
  if (hysteresis !== undefined && hysteresis !== null) {
    if (typeof hysteresis !== 'number' || !Number.isFinite(hysteresis) || hysteresis < 0) {
      return problem(['hysteresis'], `must be a number ≥ 0, got ${JSON.stringify(hysteresis)}`);
    }
    h = hysteresis;
  }
  if (!Array.isArray(rules)) return problem(['rules'], 'must be a list of rules');
  const parsed: ThresholdRule[] = [];
  for (const [index, candidate] of (rules as unknown[]).entries()) {
    const rule = checkRule(candidate, dataType);
    if ('path' in rule) return problem(['rules', index, ...rule.path], rule.message);
    parsed.push(rule);
  }
  const set: ThresholdSet = { rules: parsed, hysteresis: h };
  if (stale !== undefined && stale !== null) {
    const checked = checkStaleRule(stale);
    if ('path' in checked) return problem(['stale', ...checked.path], checked.message);
    set.stale = checked.rule;
  }
  return { ok: true, value: set };
}

function checkRule(candidate: unknown, dataType: DataType): ThresholdRule | ThresholdProblem {
  if (typeof candidate !== 'object' || candidate === null || Array.isArray(candidate)) {
    return { path: [], message: 'must be an object like {status: WARNING, above: 25}' };
  }
  const raw = candidate as Record<string, unknown>;
  const unknown = Object.keys(raw).filter((k) => !RULE_KEYS.has(k));
  if (unknown.length > 0) {
    return { path: [], message: `unknown field ${unknown.map((k) => `"${k}"`).join(', ')}` };
  }
  if (!RULE_STATUSES.includes(raw.status as RuleStatus)) {
    return {
      path: ['status'],
      message: `must be one of ${RULE_STATUSES.join(', ')}, got ${JSON.stringify(raw.status) ?? 'nothing'}`,
    };
  }
  const kinds = LIMIT_KINDS.filter((k) => raw[k] !== undefined && raw[k] !== null);
  if (kinds.length !== 1) {
    const found = kinds.length === 0 ? 'none' : kinds.join(' and ');
    return { path: [], message: `needs exactly one of above, below or equals (found ${found})` };
  }
  const kind = kinds[0]!;
  const checked = checkLimit(kind, raw[kind], dataType);
  if ('wrong' in checked) return { path: [kind], message: checked.wrong };
  const rule: ThresholdRule = { status: raw.status as RuleStatus, [kind]: checked.limit };
  if (raw.description !== undefined && raw.description !== null) {
    const text = raw.description;
    if (typeof text !== 'string' || text.trim() === '' || text.length > DESCRIPTION_MAX) {
      return { path: ['description'], message: `must be text of 1-${DESCRIPTION_MAX} characters` };
    }
    rule.description = text.trim();
  }
  if (raw.for !== undefined && raw.for !== null) {
    const duration = parseConditionDuration(raw.for);
    if ('wrong' in duration) return { path: ['for'], message: duration.wrong };
    rule.forMs = duration.ms;
  }
  return rule;
}

/** The rule's limit as stored (equals converted to the data type), or what is wrong with it. */
function checkLimit(
  kind: (typeof LIMIT_KINDS)[number],
  value: unknown,
  dataType: DataType,
): { limit: string | number | boolean } | { wrong: string } {
  if (kind === 'equals') {
    if (dataType === 'gps') return { wrong: 'gps data points have no equals rules' };
    const converted = convertValue(dataType, value);
    if (converted?.ok && typeof converted.value !== 'object') return { limit: converted.value };
    const reason = converted && !converted.ok ? converted.reason : 'no value';
    return { wrong: `does not fit data type ${dataType}: ${reason}` };
  }
  if (!isNumericDataType(dataType)) {
    return { wrong: `${kind} needs a numeric data type; ${dataType} has only equals` };
  }
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    return { wrong: `must be a number, got ${JSON.stringify(value)}` };
  }
  return { limit: value };
}

function problem(path: (string | number)[], message: string): { ok: false; problem: ThresholdProblem } {
  return { ok: false, problem: { path, message } };
}

const SEVERITY: Record<Status, number> = Object.fromEntries(STATUSES.map((s, i) => [s, i])) as Record<
  Status,
  number
>;

/**
 * The status of `value` under `set`, given the rule that set the previous status
 * (`previousRuleIndex`, -1 = SUCCESS or unknown).
 */
export function evaluateStatus(
  value: DataValue,
  set: ThresholdSet,
  previousRuleIndex: number,
): StatusOutcome {
  const ruleIndex = ruleFor(value, set.rules, previousRuleIndex, set.hysteresis);
  return { status: ruleIndex >= 0 ? set.rules[ruleIndex]!.status : 'SUCCESS', ruleIndex };
}

/**
 * `holdMargin` > 0 for the rule that set the previous status: it keeps matching until the value
 * has moved the margin back past its limit, so a value hovering at the limit does not flap.
 * `equals` ignores it: an equality has no side to move back across (a string or boolean has no
 * distance at all), so "hysteresis" could only mean never leaving the status.
 */
function ruleMatches(rule: ThresholdRule, value: DataValue, holdMargin: number): boolean {
  if (rule.above !== undefined) return typeof value === 'number' && value > rule.above - holdMargin;
  if (rule.below !== undefined) return typeof value === 'number' && value < rule.below + holdMargin;
  if (rule.equals !== undefined) return valueEquals(value, rule.equals);
  return false;
}

/** Equality after converting the rule's value to the value's kind (rules set by hand may be "5"). */
function valueEquals(value: DataValue, expected: string | number | boolean): boolean {
  if (typeof value === typeof expected) return value === expected;
  if (typeof value === 'number') {
    const converted = convertValue('number', expected);
    return converted?.ok === true && converted.value === value;
  }
  if (typeof value === 'boolean') {
    const converted = convertValue('boolean', expected);
    return converted?.ok === true && converted.value === value;
  }
  if (typeof value === 'string') return String(expected) === value;
  return false;
}

/**
 * The rule index (-1 = SUCCESS) `value` enters for every possible previous rule: position 0 for
 * previous -1 (SUCCESS), position i + 1 for previous rule i; possibleOutcomes' rule indexes. The
 * worker computes these for every stored value, so the atomic Redis step can pick the outcome by
 * the stored previous rule without re-implementing thresholds in Lua.
 */
export function possibleRules(value: DataValue, set: ThresholdSet): readonly number[] {
  const { rules, hysteresis } = set;
  const fresh = ruleFor(value, rules, -1, 0);
  let out: number[] | undefined;
  for (let index = 0; index < rules.length; index += 1) {
    // Hysteresis changes nothing without a margin or for equals rules.
    const sticky = hysteresis > 0 && rules[index]!.equals === undefined;
    const rule = sticky ? ruleFor(value, rules, index, hysteresis) : fresh;
    if (rule !== fresh && out === undefined) out = Array<number>(index + 1).fill(fresh);
    out?.push(rule);
  }
  // Almost every value enters the same rule whatever the previous one: a shared list, not a new one.
  return out ?? uniformRules(fresh, rules.length + 1);
}

/**
 * For a set whose rules wait (`for`), what the state step needs instead of possibleRules: the rules
 * `value` meets, in preference order (most severe first, then list order), for every possible
 * previous rule — position 0 for previous -1, position i + 1 for previous rule i (whose limit holds
 * with the hysteresis margin). The state step enters the first of them whose duration is met and
 * keeps when each began to hold. One list alone when the previous rule changes nothing.
 */
export function possibleMatches(value: DataValue, set: ThresholdSet): readonly (readonly number[])[] {
  const { rules, hysteresis } = set;
  const fresh = matchingRules(value, rules, -1, 0);
  // Most values meet no rule whatever the previous one: one shared answer, nothing allocated.
  if (fresh.length === 0 && !(hysteresis > 0 && rules.some((r) => r.equals === undefined))) return NO_MATCH;
  let out: (readonly number[])[] | undefined;
  for (let index = 0; index < rules.length; index += 1) {
    const sticky = hysteresis > 0 && rules[index]!.equals === undefined;
    const matched = sticky ? matchingRules(value, rules, index, hysteresis) : fresh;
    if (out === undefined && !sameList(matched, fresh)) out = Array<readonly number[]>(index + 1).fill(fresh);
    out?.push(matched);
  }
  return out ?? (fresh.length === 0 ? NO_MATCH : [fresh]);
}

/** possibleMatches of a value that meets no rule, for any previous rule. */
export const NO_MATCH: readonly (readonly number[])[] = Object.freeze([Object.freeze([])]);

/** The indexes of the rules `value` meets, most severe first, then in list order. */
function matchingRules(
  value: DataValue,
  rules: readonly ThresholdRule[],
  held: number,
  hysteresis: number,
): readonly number[] {
  const matched: number[] = [];
  for (let index = 0; index < rules.length; index += 1) {
    if (ruleMatches(rules[index]!, value, index === held ? hysteresis : 0)) matched.push(index);
  }
  return matched.sort((a, b) => SEVERITY[rules[b]!.status] - SEVERITY[rules[a]!.status] || a - b);
}

const sameList = (a: readonly number[], b: readonly number[]): boolean =>
  a.length === b.length && a.every((x, i) => x === b[i]);

const uniformLists: (readonly number[])[][] = [];
/** `[rule, rule, …]` of `length`, one frozen list per pair. */
function uniformRules(rule: number, length: number): readonly number[] {
  const byRule = (uniformLists[length] ??= []);
  return (byRule[rule + 1] ??= Object.freeze(Array<number>(length).fill(rule)));
}

/**
 * The index of the most severe matching rule (-1: none, SUCCESS), ties to the first in list order;
 * the rule `held` (the previous one) matches with the hysteresis margin.
 */
function ruleFor(
  value: DataValue,
  rules: readonly ThresholdRule[],
  held: number,
  hysteresis: number,
): number {
  let best = -1;
  let bestSeverity = 0; // SUCCESS
  for (let index = 0; index < rules.length; index += 1) {
    const rule = rules[index]!;
    const severity = SEVERITY[rule.status];
    if (severity > bestSeverity && ruleMatches(rule, value, index === held ? hysteresis : 0)) {
      best = index;
      bestSeverity = severity;
    }
  }
  return best;
}

/**
 * The outcome for every possible previous rule: position 0 for previous -1 (SUCCESS), position
 * i + 1 for previous rule i (possibleRules with statuses).
 */
export function possibleOutcomes(value: DataValue, set: ThresholdSet): StatusOutcome[] {
  return possibleRules(value, set).map((ruleIndex) => ({
    status: ruleIndex >= 0 ? set.rules[ruleIndex]!.status : 'SUCCESS',
    ruleIndex,
  }));
}

/**
 * A short stable id of a threshold set (12 hex of SHA-256 over a canonical form): the stored
 * previous rule index only means something under the same set, so state keeps this beside it.
 */
export function thresholdFingerprint(set: ThresholdSet): string {
  const canonical = JSON.stringify({
    h: set.hysteresis,
    r: set.rules.map((r) => [
      r.status,
      r.above ?? null,
      r.below ?? null,
      r.equals ?? null,
      r.description ?? null,
      // Absent rather than null when there is none: sets written before `for` and `stale` keep
      // their fingerprint, and with it the rule their status was entered through.
      ...(r.forMs ? [r.forMs] : []),
    ]),
    ...(set.stale ? { s: [set.stale.afterMs, set.stale.status] } : {}),
  });
  return sha256Hex(canonical).slice(0, 12);
}

/** A rule as it is written (what a definition file, a device override and `/thresholds/set` take): `for` as a duration, `10m`. */
export interface PublicRule {
  status: ThresholdRule['status'];
  above?: number;
  below?: number;
  equals?: string | number | boolean;
  description?: string;
  for?: string;
}

/** Rules of a data point as they are written: what a definition file and `/thresholds/set` take back unchanged. */
export interface PublicRules {
  rules: PublicRule[];
  hysteresis: number;
  /** No value for `after` (a duration) gives `status`; null: never stale. */
  stale: { after: string; status: StaleRule['status'] } | null;
}

/** A rule as it is written. */
export function publicRule(rule: ThresholdRule): PublicRule {
  const { forMs, ...rest } = rule;
  return forMs === undefined ? rest : { ...rest, for: formatDurationMs(forMs) };
}

export function publicRules(set: ThresholdSet): PublicRules {
  return {
    rules: set.rules.map(publicRule),
    hysteresis: set.hysteresis,
    stale: set.stale ? { after: formatDurationMs(set.stale.afterMs), status: set.stale.status } : null,
  };
}
