/**
 * How one data point's state moves when a value or a deadline comes: the status a value enters (from
 * the outcomes the converter computed for every previous rule), the rules that wait (`for`) and
 * their deadlines, the stale rule, and the clock hour `last24Hours` reads. The partition's owner
 * runs this on the state it holds (device-step.ts); Redis only stores the result.
 *
 * Waiting rules, in measurement time: the rules the current value meets are held in `held`, in
 * preference order (most severe first), each waiting one with the time its condition began to hold.
 * A rule's deadline is `sinceMs` + its duration. A value enters the first held rule that applies at
 * once or whose duration is met at the value's time. A deadline that passes with no value before it
 * is applied at the deadline itself, with the value that held: by the device's timer (a tick), or —
 * when a value measured after it is applied first — just before that value. Either way the result is
 * that of applying values and deadlines in the order of their times, and the deadline's time becomes
 * the data point's effective time (`updatedMs`, offset -1), so a value measured before it goes to
 * history only.
 *
 * Stale, in receive time: a data point whose current value was received `stale.afterMs` ago gets
 * the stale status (rule STALE_RULE) at a tick, if its device has sent a payload since and its
 * contact is not lost; otherwise it waits for the device's next contact. Its next value replaces it.
 */
import { returnedToSuccessMessage, sensorEventMessage } from './event-messages.ts';
import type { Status } from './types.ts';

/** Rule index of a status that comes from the stale rule. */
export const STALE_RULE = -2;
const HOUR_MS = 3_600_000;

/** What a data point's rules give the state step (the converter builds one per rule set). */
export interface PointRules {
  /** Status of each rule, by rule index. */
  statuses: Status[];
  /** Event text of each rule ("Above 25 °C" or the rule's own, then " for 10 min" when it waits). */
  descriptions: string[];
  /** Fingerprint of the rule list (a stored rule index is only valid for the same list). */
  rulesId: string;
  suppressed: boolean;
  sensorType: string;
  /** When a rule waits (`for`): each rule's duration in ms, 0 for a rule that applies at once. */
  forMs?: number[];
  /** The stale rule, with its event text ("No value for 30 min"). */
  stale?: { afterMs: number; status: Status; text: string };
}

/** A data point's current hour: the numeric values that became current in it. */
export interface KeptHour {
  /** Epoch ms / 3,600,000. */
  hour: number;
  count: number;
  total: number;
  min: number;
  max: number;
  /** A value of this hour came that did not become current (older, or a repeat). */
  late: boolean;
}

/** A rule the current value meets; `sinceMs` when it waits (`for`): the start of its condition. */
export interface HeldRule {
  rule: number;
  sinceMs: number | null;
}

/** A data point's stored state, once it has had a value. */
export interface PointRecord {
  /** Measurement time of the current value, epoch ms; a deadline's once a waiting rule entered at it. */
  updatedMs: number;
  /** Sub-ms tiebreak of `updatedMs` (ns; -1 at a deadline). */
  offsetNs: number;
  /** Index of the threshold rule the status was entered through (-1 = none, STALE_RULE = stale). */
  rule: number;
  rulesId: string;
  status: string;
  lastSuccessMs: number | null;
  statusSinceMs: number | null;
  /** Null when no hour is kept (text and GPS values). */
  hour: KeptHour | null;
  /** When the current value was received (epoch ms); null when unknown. */
  receivedMs: number | null;
  /** The rules the current value meets, in preference order (only kept when rules wait). */
  held: HeldRule[];
  /** The current value as shown (`31.0 °C`); '' when not kept (no rule with a timer). */
  shownValue: string;
}

/** One value to apply to a data point. */
export interface PointValue {
  timeMs: number;
  offsetNs: number;
  valueJson: string;
  /** Formatted with units: what events show. */
  currentValue: string;
  /** Rule index reached for each previous rule -1..n-1 (one entry: the same for all). */
  outcomes: readonly number[];
  /** With waiting rules: the rules met in preference order for each previous rule (one: for all). */
  matches?: readonly (readonly number[])[];
  receivedMs: number;
  /** What history aggregates: the number, a boolean's 1/0, or null (text, GPS). */
  number: number | null;
}

/** A data point during a step: its record (null before its first value) and its value as JSON. */
export interface PointState {
  readonly name: string;
  record: PointRecord | null;
  /** The current value's JSON, as stored; null before the first value. */
  valueJson: string | null;
  /** The step changed the record (it must be written). */
  changed: boolean;
  /** The step gave it a new current value (`valueJson` must be written). */
  valueChanged: boolean;
}

/** A status change a step found: an event, or for a suppressed data point only its alarm. */
export interface StatusChange {
  sensor: string;
  status: Status;
  atMs: number;
  /** Null for a suppressed data point: its alarm follows the status, and no event is created. */
  event: {
    id: string;
    sensorType: string;
    valueJson: string;
    message: string;
  } | null;
}

/** Where a step puts the changes it finds, in order. */
export interface StepChanges {
  readonly env: string;
  readonly device: string;
  readonly changes: StatusChange[];
}

export const statusOfRule = (rules: PointRules, rule: number): Status =>
  rule >= 0 ? rules.statuses[rule]! : rule === STALE_RULE ? rules.stale!.status : 'SUCCESS';

const hasTimers = (rules: PointRules): boolean => rules.forMs !== undefined || rules.stale !== undefined;

/**
 * Applies one value. Returns the status it leaves the data point in, or null when the value was not
 * newer than the current one (history only; its hour is marked late).
 */
export function applyValue(p: PointState, rules: PointRules, v: PointValue, out: StepChanges): Status | null {
  const first = p.record === null;
  const r = p.record ?? freshRecord(v);
  if (!first && (v.timeMs < r.updatedMs || (v.timeMs === r.updatedMs && v.offsetNs <= r.offsetNs))) {
    if (v.number !== null) markLate(p, v.timeMs);
    return null;
  }
  p.record = r;
  const rule = ruleOfValue(p, rules, v, first, out);
  if (rule === -1) r.lastSuccessMs = v.timeMs;
  if (first || rule !== r.rule || statusOfRule(rules, rule) !== r.status) {
    changeStatus(p, rules, rule, v.timeMs, String(v.offsetNs), v.valueJson, v.currentValue, out, first);
  }
  r.updatedMs = v.timeMs;
  r.offsetNs = v.offsetNs;
  r.rulesId = rules.rulesId;
  r.receivedMs = v.receivedMs;
  // The value as shown is kept only where a deadline may need it for its event.
  r.shownValue = hasTimers(rules) ? v.currentValue : '';
  p.valueJson = v.valueJson;
  p.valueChanged = true;
  p.changed = true;
  if (v.number !== null) addToHour(r, v.timeMs, v.number);
  return r.status as Status;
}

/** A record for a data point's first value; every field is set by the value's application. */
function freshRecord(v: PointValue): PointRecord {
  return {
    updatedMs: v.timeMs,
    offsetNs: v.offsetNs,
    rule: -1,
    rulesId: '',
    status: 'SUCCESS',
    lastSuccessMs: null,
    statusSinceMs: null,
    hour: null,
    receivedMs: null,
    held: [],
    shownValue: '',
  };
}

/** The rule a value enters through its outcomes, given the rule in force. */
function ruleOfValue(p: PointState, rules: PointRules, v: PointValue, first: boolean, out: StepChanges): number {
  const r = p.record!;
  // A rule index only means something for the rule list it was recorded with; a stale status comes
  // from no rule. Taken before the deadlines below: the outcomes were computed for the rule in force.
  const previous = first || r.rulesId !== rules.rulesId || r.rule === STALE_RULE ? -1 : r.rule;
  if (rules.forMs) {
    if (!first) fireDeadlines(p, rules, v.timeMs, false, out);
    const matches = v.matches ?? [[]];
    return enterWaiting(r, rules.forMs, matches[previous + 1] ?? matches[0]!, v.timeMs);
  }
  return v.outcomes[previous + 1] ?? v.outcomes[0]!;
}

/**
 * Moves the data point to `rule` at `atMs`: status since, and the change (event, or the alarm alone
 * for a suppressed data point) when its status changes. `idTail` ends the event's id after the time:
 * a value's sub-ms offset, `t` for a deadline, `s` for stale.
 */
function changeStatus(
  p: PointState,
  rules: PointRules,
  rule: number,
  atMs: number,
  idTail: string,
  valueJson: string,
  shown: string,
  out: StepChanges,
  first: boolean,
): void {
  const r = p.record!;
  const status = statusOfRule(rules, rule);
  if (status !== r.status || first) r.statusSinceMs = atMs;
  if (status !== r.status) {
    out.changes.push({
      sensor: p.name,
      status,
      atMs,
      event: rules.suppressed
        ? null
        : {
            id: `${out.env}/${out.device}/${p.name}/${atMs}.${idTail}`,
            sensorType: rules.sensorType,
            valueJson,
            message:
              status === 'SUCCESS'
                ? returnedToSuccessMessage(p.name, shown)
                : sensorEventMessage(p.name, eventText(rules, rule), status, shown),
          },
    });
  }
  r.status = status;
  r.rule = rule;
  p.changed = true;
}

const eventText = (rules: PointRules, rule: number): string =>
  rule === STALE_RULE ? rules.stale!.text : (rules.descriptions[rule] ?? '');

/** The earliest deadline of a held waiting rule after the effective time, before `horizon`. */
function dueDeadline(r: PointRecord, forMs: readonly number[], horizon: number, inclusive: boolean) {
  let best: number | null = null;
  for (const h of r.held) {
    if (h.sinceMs === null) continue;
    const dl = h.sinceMs + forMs[h.rule]!;
    if (dl > r.updatedMs && (dl < horizon || (inclusive && dl === horizon)) && (best === null || dl < best))
      best = dl;
  }
  return best;
}

/**
 * Applies the deadlines of the waiting rules that fall before `horizon` (a value's time), or up to
 * it (a tick's), in time order, each with the value that held.
 */
export function fireDeadlines(
  p: PointState,
  rules: PointRules,
  horizon: number,
  inclusive: boolean,
  out: StepChanges,
): void {
  const r = p.record;
  const forMs = rules.forMs;
  if (!forMs || !r) return;
  for (let i = 0; i < r.held.length; i++) {
    const dl = dueDeadline(r, forMs, horizon, inclusive);
    if (dl === null) return;
    let rule = -1;
    for (const h of r.held) {
      const wait = forMs[h.rule]!;
      if (wait === 0 || (h.sinceMs !== null && h.sinceMs + wait <= dl)) {
        rule = h.rule;
        break;
      }
    }
    changeStatus(p, rules, rule, dl, 't', p.valueJson ?? 'null', r.shownValue, out, false);
    r.updatedMs = dl;
    r.offsetNs = -1;
  }
}

/**
 * The rule a value at `ms` enters under waiting rules: `matches` lists the rules it meets in
 * preference order; `held` becomes them, keeping the start of each that held before.
 */
function enterWaiting(r: PointRecord, forMs: readonly number[], matches: readonly number[], ms: number): number {
  if (matches.length === 0) {
    r.held = [];
    return -1;
  }
  const since = new Map<number, number>();
  for (const h of r.held) if (h.sinceMs !== null) since.set(h.rule, h.sinceMs);
  const held: HeldRule[] = [];
  let rule = -1;
  for (const m of matches) {
    const wait = forMs[m]!;
    const start = wait > 0 ? (since.get(m) ?? ms) : null;
    held.push({ rule: m, sinceMs: start });
    if (rule < 0 && (wait === 0 || ms - start! >= wait)) rule = m;
  }
  r.held = held;
  return rule;
}

/**
 * Marks the data point stale at a tick when its value is overdue and the device has sent a payload
 * since while its contact is not lost. Returns true when it is overdue but must wait for contact.
 */
export function checkStale(
  p: PointState,
  rules: PointRules,
  nowMs: number,
  contact: { lastContactMs: number | null; lost: boolean },
  out: StepChanges,
): boolean {
  const r = p.record;
  if (!rules.stale || !r || r.rule === STALE_RULE || r.receivedMs === null) return false;
  const due = r.receivedMs + rules.stale.afterMs;
  if (due > nowMs) return false;
  if (contact.lastContactMs === null || contact.lastContactMs <= r.receivedMs || contact.lost) return true;
  r.held = [];
  changeStatus(p, rules, STALE_RULE, due, 's', p.valueJson ?? 'null', r.shownValue, out, false);
  return false;
}

/** The data point's next timer: a waiting rule's deadline, or when it goes stale; null when none. */
export function nextDeadline(p: PointState, rules: PointRules, waitsForContact: boolean): number | null {
  const r = p.record;
  if (!r) return null;
  let next: number | null = null;
  if (rules.forMs) {
    for (const h of r.held) {
      if (h.sinceMs === null) continue;
      const dl = h.sinceMs + rules.forMs[h.rule]!;
      if (dl > r.updatedMs && (next === null || dl < next)) next = dl;
    }
  }
  if (rules.stale && r.rule !== STALE_RULE && r.receivedMs !== null && !waitsForContact) {
    const due = r.receivedMs + rules.stale.afterMs;
    if (next === null || due < next) next = due;
  }
  return next;
}

/**
 * The current value's clock hour: count, total, min and max of the numeric values that became
 * current in it. Each value becomes current once, so a replayed step counts nothing twice.
 */
function addToHour(r: PointRecord, ms: number, x: number): void {
  const hour = Math.floor(ms / HOUR_MS);
  const h = r.hour;
  if (h && h.hour === hour) {
    h.count += 1;
    h.total += x;
    if (x < h.min) h.min = x;
    if (x > h.max) h.max = x;
  } else r.hour = { hour, count: 1, total: x, min: x, max: x, late: false };
}

/**
 * A value of the current hour came that did not become current (older, or a repeat: which of the
 * two cannot be told, so the reader asks InfluxDB, where a repeat lands on the same point).
 */
function markLate(p: PointState, ms: number): void {
  const h = p.record?.hour;
  if (h && h.hour === Math.floor(ms / HOUR_MS) && !h.late) {
    h.late = true;
    p.changed = true;
  }
}
