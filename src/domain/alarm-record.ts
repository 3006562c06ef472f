/**
 * The alarm of a data point or of a device's availability, as its status changes: a status other
 * than SUCCESS, or a lost contact, is an open alarm until it returns. The record keeps when it
 * opened, its status, the event that last set it, and its acknowledgement while that covers the
 * status.
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
  const to = ALARM_SEVERITY[status];
  const record: StoredAlarm = stored
    ? { ...stored, st: status }
    : { d: change.device, s: change.sensor, c: change.category, st: status, sm: change.atMs };
  if (eventJson !== null) record.ev = eventJson;
  // An acknowledgement covers the status it was given for and any less severe one.
  if (record.a && to > ALARM_SEVERITY[record.a.st]) delete record.a;
  return record;
}

export const alarmScore = (a: StoredAlarm): number => (4 - ALARM_SEVERITY[a.st]) * ALARM_BAND + a.sm;
