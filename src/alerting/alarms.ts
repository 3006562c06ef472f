/**
 * Alarms as people see them: a data point in any status but SUCCESS, or a device whose contact is
 * lost, is an open alarm until it returns (the state scripts keep the index: src/state/
 * alarm-index.ts). Listing them, most severe first, then oldest; and acknowledging one, which is
 * recorded in the audit log in the same step, and ends its reminders (each finds the alarm
 * acknowledged when it comes due: reminders.ts).
 */
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import { createAlarmIndex, type AlarmRecord } from '../state/alarm-index.ts';
import type { StateKeys } from '../state/state-keys.ts';
import type { TenancyStore } from '../tenancy/tenancy-store.ts';
import type { AuditKeys } from '../audit/audit-keys.ts';
import type { AuditRecord } from '../audit/audit-log.ts';

/** An alarm as the read API serves it. */
export interface ServedAlarm {
  deviceName: string;
  displayName: string;
  /** Null for the device's Availability alarm. */
  sensorName: string | null;
  eventCategory: 'Sensors' | 'Availability';
  status: AlarmRecord['status'];
  /** When the alarm opened. */
  sinceUTC: string;
  acknowledged: boolean;
  acknowledgedBy: string | null;
  acknowledgedUTC: string | null;
  note: string | null;
}

export const ALARMS_DEFAULT_LIMIT = 1000;
export const ALARMS_MAX_LIMIT = 10_000;
/** Longest acknowledgement note, in characters. */
export const NOTE_MAX_LENGTH = 1000;

export interface AlarmsDeps {
  redis: Redis;
  keys: StateKeys & AuditKeys;
  tenancy: Pick<TenancyStore, 'getDevice' | 'getDevices'>;
  /** How long the audit log keeps an entry, in ms (VIGIL_AUDIT_RETENTION_DAYS). */
  auditRetentionMs: number;
}

export interface Acknowledgement {
  env: string;
  deviceName: string;
  /** Absent: the device's Availability alarm. */
  sensorName?: string | undefined;
  note?: string | undefined;
  /** Who acknowledges (src/audit/audit-log.ts: tokenActor). */
  actor: string;
  nowMs: number;
}

export interface Alarms {
  /** The environment's open alarms, most severe first, then oldest. */
  list(env: string, limit?: number): Promise<ServedAlarm[]>;
  /**
   * Acknowledges an open alarm: DEVICE_NOT_FOUND for a device the environment does not have,
   * ALARM_NOT_FOUND when no alarm of it is open. Returns the alarm as acknowledged.
   */
  acknowledge(ack: Acknowledgement): Promise<ServedAlarm>;
}

export function createAlarms(deps: AlarmsDeps): Alarms {
  const { keys, tenancy } = deps;
  const index = createAlarmIndex(deps.redis, keys);

  /** Current display names (the device's own, which may have changed since the alarm opened). */
  async function displayNames(env: string, alarms: AlarmRecord[]): Promise<Map<string, string>> {
    const names = [...new Set(alarms.map((a) => a.device))];
    const devices = await tenancy.getDevices(env, names);
    return new Map(names.map((n, i) => [n, devices[i]?.displayName ?? n]));
  }

  return {
    async list(env, limit = ALARMS_DEFAULT_LIMIT) {
      const alarms = await index.list(env, limit);
      const names = await displayNames(env, alarms);
      return alarms.map((a) => serveAlarm(a, names.get(a.device) ?? a.device));
    },

    async acknowledge({ env, deviceName, sensorName, note, actor, nowMs }) {
      const device = await tenancy.getDevice(env, deviceName);
      if (!device) {
        throw new AppError('DEVICE_NOT_FOUND', `No device ${deviceName}.`, { details: { deviceName } });
      }
      const sensor = sensorName ?? null;
      const entry: AuditRecord = {
        atUTC: new Date(nowMs).toISOString(),
        actor,
        action: 'alarm.acknowledge',
        target: `${deviceName}/${sensor ?? 'availability'}`,
        details: { ...(note === undefined ? {} : { note }) },
      };
      const alarm = await index.acknowledge({
        env,
        device: deviceName,
        sensor,
        by: actor,
        nowMs,
        note: note ?? null,
        auditKey: keys.auditLog(env),
        auditEntry: entry,
        auditKeepFromMs: Math.max(0, nowMs - deps.auditRetentionMs),
      });
      if (!alarm) {
        const what = sensor === null ? 'the Availability of' : `data point ${sensor} of`;
        throw new AppError('ALARM_NOT_FOUND', `No open alarm for ${what} device ${deviceName}.`, {
          details: { deviceName, ...(sensor === null ? {} : { sensorName: sensor }) },
        });
      }
      return serveAlarm(alarm, device.displayName);
    },
  };
}

export function serveAlarm(a: AlarmRecord, displayName: string): ServedAlarm {
  const ack = a.acknowledgement;
  return {
    deviceName: a.device,
    displayName,
    sensorName: a.sensor,
    eventCategory: a.category,
    status: a.status,
    sinceUTC: new Date(a.openedMs).toISOString(),
    acknowledged: ack !== null,
    acknowledgedBy: ack?.by ?? null,
    acknowledgedUTC: ack ? new Date(ack.atMs).toISOString() : null,
    note: ack?.note ?? null,
  };
}
