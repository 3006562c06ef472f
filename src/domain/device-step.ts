/**
 * One device's part of a worker step, decided by the partition's owner on the state it holds: its
 * values applied to their data points in time order (point-step.ts), its contact and the "Contact
 * restored" event, its availability deadline and the timer of its rules that wait or go stale, and
 * a tick (its timer came due). The result says what to store; nothing here touches Redis.
 *
 * Deadlines and timers are kept lazily: the deadlines set and the timers set hold a time no later
 * than the real one, so a device that keeps reporting writes its deadline once per timeout period,
 * not once per step. A step writes a deadline only for a first contact, after a lost contact, or for
 * a shorter timeout; a step of values only brings the timer forward; a tick sets it to the exact next
 * one.
 */
import { availabilityRestoredMessage } from './event-messages.ts';
import {
  applyValue,
  checkStale,
  fireDeadlines,
  nextDeadline,
  type PointRecord,
  type PointRules,
  type PointState,
  type PointValue,
  type StatusChange,
  type StepChanges,
} from './point-step.ts';
import type { Status } from './types.ts';

/**
 * A device's timer earlier than its next deadline is moved to it by a step that knows every
 * deadline (it has a value of every data point) when the timer falls due within this many ms.
 */
const TIMER_SOON_MS = 10_000;

/** The device-level part of its stored state. */
export interface DeviceFields {
  /** Receive time of the latest accepted payload, epoch ms. */
  lastContactMs: number | null;
  lost: boolean;
  /** This device's entry in the availability deadlines set (no later than the real deadline). */
  deadlineMs: number | null;
  /** The availability timeout the last payload came with, ms (null: never stored). */
  timeoutMs: number | null;
  /** This device's entry in the timers set (no later than its earliest deadline). */
  timerMs: number | null;
  /** A stale data point waits for the device's next contact. */
  staleWaits: boolean;
}

/** A device's state as its owner holds it. */
export interface DeviceState {
  fields: DeviceFields;
  points: Map<string, PointState>;
}

/** A value of one of the device's data points. */
export interface DeviceValue extends PointValue {
  sensor: string;
}

export interface DeviceInput {
  env: string;
  device: string;
  /** Receive time of the newest accepted payload of the step (0: none, e.g. a tick alone). */
  contactMs: number;
  timeoutMs: number;
  /** Rules of each data point with a value, and with a tick of every one that keeps timers. */
  rules: ReadonlyMap<string, PointRules>;
  /** Sorted by (timeMs, offsetNs). */
  values: readonly DeviceValue[];
  tick: boolean;
  /** The values include one of every data point of the definition: every deadline is known. */
  allPoints: boolean;
}

/** What the device's step decided, for the store to write. */
export interface DeviceOutcome {
  /** The status each value left its data point in; null where it was history only. */
  applied: (Status | null)[];
  changes: StatusChange[];
  /** The availability alarm closes (contact restored); the event is in `changes` (sensor ''). */
  contactRestored: boolean;
  /** Device fields to write (those that changed). */
  fieldWrites: Partial<DeviceFields>;
  /** New score of the device's entry in the deadlines set. */
  deadline: number | null;
  /** The device's timer entry: a new score, removed, or unchanged (undefined). */
  timer: { set: number } | { remove: true; entry: boolean } | undefined;
  /** The device's first contact: it leaves the environment's never-heard set. */
  firstContact: boolean;
}

export function emptyDevice(): DeviceState {
  return {
    fields: {
      lastContactMs: null,
      lost: false,
      deadlineMs: null,
      timeoutMs: null,
      timerMs: null,
      staleWaits: false,
    },
    points: new Map(),
  };
}

/** Runs the device's step on `state`, which it changes in place. */
export function runDeviceStep(state: DeviceState, input: DeviceInput, nowMs: number): DeviceOutcome {
  const out: StepChanges = { env: input.env, device: input.device, changes: [] };
  const points = stepPoints(state, input);
  const applied = input.values.map((v) => applyValue(points.get(v.sensor)!, input.rules.get(v.sensor)!, v, out));
  const f = state.fields;
  const writes: Partial<DeviceFields> = {};
  const contact = applyContact(f, input, writes, out);
  const timer = nextTimer(state, points, input, nowMs, contact.contacted, writes, out);
  return {
    applied,
    changes: out.changes,
    contactRestored: contact.restored,
    fieldWrites: writes,
    deadline: contact.deadline,
    timer,
    firstContact: contact.first,
  };
}

/**
 * The step's data points: held rules only mean something for the rule list they were recorded with,
 * and only while the rules wait, so a data point whose rules changed starts the step without them.
 */
function stepPoints(state: DeviceState, input: DeviceInput): Map<string, PointState> {
  for (const [name, rules] of input.rules) {
    let p = state.points.get(name);
    if (!p) {
      p = { name, record: null, valueJson: null, changed: false, valueChanged: false };
      state.points.set(name, p);
    }
    p.changed = false;
    p.valueChanged = false;
    const r = p.record;
    if (r && r.held.length > 0 && (!rules.forMs || r.rulesId !== rules.rulesId)) {
      p.record = { ...r, held: [] };
      unfiltered.set(p, r);
    }
  }
  return state.points;
}

/** Records whose held rules a step set aside: kept as stored when the step does not change them. */
const unfiltered = new WeakMap<PointState, PointRecord>();

/** Puts back what a step set aside in a data point it did not change. */
export function settlePoints(state: DeviceState): void {
  for (const p of state.points.values()) {
    const stored = unfiltered.get(p);
    if (stored === undefined) continue;
    unfiltered.delete(p);
    if (!p.changed) p.record = stored;
  }
}

/**
 * Contact: the receive time of the latest accepted payload, the availability deadline kept lazily
 * (written for a first deadline, after a lost contact, or for a shorter timeout), and the "Contact
 * restored" event of a device whose contact was lost.
 */
function applyContact(
  f: DeviceFields,
  input: DeviceInput,
  writes: Partial<DeviceFields>,
  out: StepChanges,
): { contacted: boolean; first: boolean; restored: boolean; deadline: number | null } {
  const result = { contacted: false, first: false, restored: false, deadline: null as number | null };
  const contactMs = input.contactMs;
  if (contactMs <= 0) return result;
  if (f.lastContactMs === null || contactMs > f.lastContactMs) {
    result.contacted = true;
    result.first = f.lastContactMs === null;
    f.lastContactMs = writes.lastContactMs = contactMs;
    if (input.timeoutMs !== f.timeoutMs) f.timeoutMs = writes.timeoutMs = input.timeoutMs;
    if (input.timeoutMs > 0) {
      const due = contactMs + input.timeoutMs;
      if (f.deadlineMs === null || due < f.deadlineMs || f.lost) {
        f.deadlineMs = writes.deadlineMs = result.deadline = due;
      }
    }
  }
  if (f.lost) {
    f.lost = writes.lost = false;
    result.restored = true;
    const iso = new Date(contactMs).toISOString();
    out.changes.push({
      sensor: '',
      status: 'SUCCESS',
      atMs: contactMs,
      event: {
        id: `${input.env}/${input.device}/availability/${contactMs}`,
        sensorType: 'availability',
        valueJson: '0',
        message: availabilityRestoredMessage(iso),
      },
    });
  }
  return result;
}

/**
 * Timers: a tick applies what came due by now to every data point with timers and sets the device's
 * timer to the exact next one; a step of values only brings it forward — or, knowing every deadline
 * (a value of every data point), moves a timer that is near and no longer due.
 */
function nextTimer(
  state: DeviceState,
  points: Map<string, PointState>,
  input: DeviceInput,
  nowMs: number,
  contacted: boolean,
  writes: Partial<DeviceFields>,
  out: StepChanges,
): DeviceOutcome['timer'] {
  const f = state.fields;
  let next: number | null = null;
  let waitsForContact = false;
  const contact = { lastContactMs: f.lastContactMs, lost: isLost(f, nowMs, input.tick) };
  for (const [name, rules] of input.rules) {
    if (!rules.forMs && !rules.stale) continue;
    const p = points.get(name)!;
    let waits = false;
    if (input.tick) {
      fireDeadlines(p, rules, nowMs, true, out);
      waits = checkStale(p, rules, nowMs, contact, out);
      waitsForContact ||= waits;
    }
    const nd = nextDeadline(p, rules, waits);
    if (nd !== null && (next === null || nd < next)) next = nd;
  }
  const tm = f.timerMs;
  if (input.tick) {
    if (waitsForContact !== f.staleWaits) f.staleWaits = writes.staleWaits = waitsForContact;
    if (next !== null) {
      f.timerMs = writes.timerMs = next;
      return { set: next };
    }
    // The scheduler removed the entry when it queued this tick; a step of values can only have
    // written one since for a deadline already past, which costs one more tick that finds nothing.
    if (tm === null) return undefined;
    f.timerMs = null;
    return { remove: true, entry: false };
  }
  // A stale data point waiting for contact is looked at again at once when contact comes.
  if (contacted && f.staleWaits) {
    f.staleWaits = writes.staleWaits = false;
    if (next === null || input.contactMs < next) next = input.contactMs;
  }
  if (next !== null && (tm === null || next < tm)) {
    f.timerMs = writes.timerMs = next;
    return { set: next };
  }
  // The timer was for a deadline this step met or reset, and with a value of every data point the
  // step knows the next one: a tick at the old time would find nothing to do. Only when the timer is
  // near: a stale rule's deadline moves with every value, and one tick per stale period costs less
  // than a write per step.
  if (input.allPoints && tm !== null && tm <= nowMs + TIMER_SOON_MS && next !== tm) {
    if (next === null) {
      f.timerMs = null;
      return { remove: true, entry: true };
    }
    f.timerMs = writes.timerMs = next;
    return { set: next };
  }
  return undefined;
}

/** At a tick: whether the device's contact is lost (marked, or its deadline passed unmarked). */
function isLost(f: DeviceFields, nowMs: number, tick: boolean): boolean {
  if (!tick) return false;
  const to = f.timeoutMs;
  return f.lost || (to !== null && to > 0 && f.lastContactMs !== null && f.lastContactMs + to <= nowMs);
}
