/**
 * The alarm index of each environment as the state scripts keep it (lua/alarm-index.lua describes
 * its layout): reading it, acknowledging an alarm, and dropping a device's alarms with the device.
 * What alarms mean to people — the listing, who may acknowledge, reminders, the audit log — is
 * alerting's (src/alerting/alarms.ts).
 */
import { readFileSync } from 'node:fs';
import type { ChainableCommander } from 'ioredis';
import { ALARM_BAND, type StoredAlarm } from '../domain/alarm-record.ts';
import type { EventRecord, RuleStatus } from '../domain/types.ts';
import type { Redis } from '../redis/connect.ts';
import { withAuditAppend } from '../audit/audit-log.ts';
import type { StateKeys } from './state-keys.ts';

const lua = (file: string) => readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8');
const ALARM_INDEX_LUA = lua('alarm-index.lua');
const ACKNOWLEDGE_LUA = withAuditAppend(lua('acknowledge-alarm.lua'));

/** `script` with the alarm index's function `setAlarm` in front of it. */
export const withAlarmIndex = (script: string): string => `${ALARM_INDEX_LUA}\n${script}`;

export interface AlarmAcknowledgement {
  /** Who acknowledged: a username, `token:<name>`, … (alarms.ts). */
  by: string;
  atMs: number;
  /** The status acknowledged: a rise above it re-opens the alarm. */
  status: RuleStatus;
  note: string | null;
}

export interface AlarmRecord {
  device: string;
  /** The data point; null for the device's Availability alarm. */
  sensor: string | null;
  category: 'Sensors' | 'Availability';
  status: RuleStatus;
  /** When the alarm opened, epoch ms: the measurement time of the value that left SUCCESS, or when contact was found lost. */
  openedMs: number;
  /** The event that last set its status; null when the index was built from stored state. */
  event: EventRecord | null;
  acknowledgement: AlarmAcknowledgement | null;
}

/** An alarm's member in the index and records: `<device>\n<sensor>`, sensor '' for Availability. */
export const alarmMember = (device: string, sensor: string | null): string => `${device}\n${sensor ?? ''}`;

/** The device and data point (null: Availability) of an index member. */
export function decodeAlarmMember(member: string): { device: string; sensor: string | null } {
  const at = member.indexOf('\n');
  const sensor = member.slice(at + 1);
  return { device: member.slice(0, at), sensor: sensor === '' ? null : sensor };
}

const BY_BAND: readonly RuleStatus[] = ['CRITICAL', 'ERROR', 'WARNING', 'INFO'];

/** An alarm's current status from its score in the index, without reading its record. */
export function alarmStatusOfScore(score: number): RuleStatus {
  const status = BY_BAND[Math.floor(score / ALARM_BAND)];
  if (!status) throw new Error(`not an alarm index score: ${score}`);
  return status;
}

export function decodeAlarm(json: string): AlarmRecord {
  const r = JSON.parse(json) as StoredAlarm;
  return {
    device: r.d,
    sensor: r.s === '' ? null : r.s,
    category: r.c,
    status: r.st,
    openedMs: r.sm,
    event: r.ev === undefined ? null : (JSON.parse(r.ev) as EventRecord),
    acknowledgement: r.a ? { by: r.a.by, atMs: r.a.ms, status: r.a.st, note: r.a.note ?? null } : null,
  };
}

/**
 * The records of the first `limit` alarms in index order, read in one step (HMGET by a thousand
 * members: unpack takes only a few thousand values).
 */
const READ_ALARMS = `local members = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[1]) - 1)
local out = {}
for i = 1, #members, 1000 do
  local part = redis.call('HMGET', KEYS[2], unpack(members, i, math.min(i + 999, #members)))
  for j = 1, #part do out[#out + 1] = part[j] end
end
return out`;

/** Removes the alarms (index members, record fields) whose member starts with ARGV[1]. */
const DROP_PREFIXED = `local prefix = ARGV[1]
for _, m in ipairs(redis.call('HKEYS', KEYS[2])) do
  if string.sub(m, 1, #prefix) == prefix then
    redis.call('ZREM', KEYS[1], m)
    redis.call('HDEL', KEYS[2], m)
  end
end
return 0`;

export interface AlarmIndex {
  /** The environment's open alarms, most severe first, then oldest; at most `limit`. */
  list(env: string, limit: number): Promise<AlarmRecord[]>;
  /** One open alarm, or null. */
  get(env: string, device: string, sensor: string | null): Promise<AlarmRecord | null>;
  /**
   * Acknowledges an open alarm and appends `auditEntry` (its `details` get the status acknowledged)
   * to the audit stream `auditKey` (src/audit), dropping entries older than `auditKeepFromMs`, in
   * one step. Null when no alarm is open.
   */
  acknowledge(ack: {
    env: string;
    device: string;
    sensor: string | null;
    by: string;
    nowMs: number;
    note: string | null;
    auditKey: string;
    auditEntry: { details: Record<string, unknown> };
    auditKeepFromMs: number;
  }): Promise<AlarmRecord | null>;
}

export function createAlarmIndex(redis: Redis, keys: StateKeys): AlarmIndex {
  return {
    async list(env, limit) {
      if (limit <= 0) return [];
      const records = (await redis.eval(
        READ_ALARMS,
        2,
        keys.alarmIndex(env),
        keys.alarmRecords(env),
        limit,
      )) as (string | null)[];
      // Each member has its record: both are written by one script.
      return records.flatMap((r) => (r === null ? [] : [decodeAlarm(r)]));
    },
    async get(env, device, sensor) {
      const json = await redis.hget(keys.alarmRecords(env), alarmMember(device, sensor));
      return json === null ? null : decodeAlarm(json);
    },
    async acknowledge(a) {
      const json = (await redis.eval(
        ACKNOWLEDGE_LUA,
        3,
        keys.alarmRecords(a.env),
        a.auditKey,
        keys.deviceState(a.env, a.device),
        alarmMember(a.device, a.sensor),
        a.by,
        a.nowMs,
        a.note ?? '',
        JSON.stringify(a.auditEntry),
        a.auditKeepFromMs,
      )) as string | null;
      return json === null ? null : decodeAlarm(json);
    },
  };
}

/** Adds to `multi` the removal of a device's alarms, for deleting the device. */
export function dropDeviceAlarms(
  multi: ChainableCommander,
  keys: StateKeys,
  env: string,
  device: string,
): void {
  multi.eval(DROP_PREFIXED, 2, keys.alarmIndex(env), keys.alarmRecords(env), alarmMember(device, ''));
}
