/**
 * The alarm of a data point or of a device's availability, as its status changes: a status other
 * than SUCCESS, or a lost contact, is an open alarm until it returns. The record keeps when it
 * opened, its status, the event that last set it, and how many times it entered each severity from
 * a lower one (`up`), which tells an acknowledgement whether the alarm rose above it since.
 */
import type { RuleStatus, Status } from './types.ts';

export const ALARM_SEVERITY: Readonly<Record<RuleStatus, number>> = { INFO: 1, WARNING: 2, ERROR: 3, CRITICAL: 4 };
/** An index score is (4 - severity) * ALARM_BAND + opened ms: most severe first, then oldest. */
export const ALARM_BAND = 1e13;

/** An open alarm as stored (JSON in the environment's alarm records). */
export interface StoredAlarm {
  /** Device. */
  d: string;
  /** Data point; '' for the device's availability. */
  s: string;
  c: 'Sensors' | 'Availability';
  st: RuleStatus;
  /** When it opened, epoch ms. */
  sm: number;
  /** The event that last set its status, as JSON; absent when none did. */
  ev?: string;
  /** Times it entered each severity (INFO, WARNING, ERROR, CRITICAL) from a lower one. */
  up?: number[];
  /** The acknowledgement, while it covers the status. */
  a?: { by: string; ms: number; st: RuleStatus; note?: string };
}

/**
 * The alarm after a status change: null when it closes (SUCCESS), else the record to store, from the
 * one stored (null: none open).
 */
export function nextAlarm(
  stored: StoredAlarm | null,
  change: { device: string; sensor: string; category: 'Sensors' | 'Availability'; status: Status; atMs: number },
  eventJson: string | null,
): StoredAlarm | null {
  if (change.status === 'SUCCESS') return null;
  const status = change.status;
  const up = [...(stored?.up ?? [0, 0, 0, 0])];
  const from = stored ? ALARM_SEVERITY[stored.st] : 0;
  const to = ALARM_SEVERITY[status];
  if (to > from) up[to - 1] = (up[to - 1] ?? 0) + 1;
  const record: StoredAlarm = stored
    ? { ...stored, st: status, up }
    : { d: change.device, s: change.sensor, c: change.category, st: status, sm: change.atMs, up };
  if (eventJson !== null) record.ev = eventJson;
  // An acknowledgement covers the status it was given for and any less severe one.
  if (record.a && to > ALARM_SEVERITY[record.a.st]) delete record.a;
  return record;
}

export const alarmScore = (a: StoredAlarm): number => (4 - ALARM_SEVERITY[a.st]) * ALARM_BAND + a.sm;
