/**
 * The read side of current state: each device's state hash (`Keys.deviceState`, fields
 * `<sensor>|<field>` and `@<field>`, see STATE_FIELD / DEVICE_FIELD) and its suppressed data points.
 * Callers put the reads in their own pipelines (planStateRead, queueStateRead, stateFromQueued) so
 * one round trip serves a whole request.
 */
import type { ChainableCommander } from 'ioredis';
import type { Bucket } from '../history/last-24-hours.ts';
import type { Redis } from '../redis/connect.ts';
import { DEVICE_FIELD, STATE_FIELD, stateField, type Keys } from './keys.ts';

/** The stored state of one device, undecoded. */
export interface DeviceStateHash {
  /** The `deviceState` hash ({} when the device never posted). */
  fields: Record<string, string>;
  /** Sensor → suppressed until (epoch ms; 0 = no expiry), as stored. */
  suppressed: Record<string, number>;
  /** Sensor → its current hour as stored (binary, see STATE_FIELD.hour), when read. */
  hours?: Record<string, Buffer>;
}

/** One data point's decoded state; null fields before its first value. */
export interface DataPointState {
  value: unknown;
  status: string;
  /** Epoch ms, or null. */
  updatedMs: number | null;
  lastSuccessMs: number | null;
  statusSinceMs: number | null;
  suppressed: boolean;
}

/** The fields of a data point that the read API shows, in the order `shownStateFields` lists them. */
const SHOWN_FIELDS = [
  STATE_FIELD.value,
  STATE_FIELD.status,
  STATE_FIELD.updated,
  STATE_FIELD.lastSuccess,
  STATE_FIELD.statusSince,
] as const;

/** The state-hash fields the read API shows of `sensors` (for one HMGET instead of HGETALL). */
function shownStateFields(sensors: readonly string[]): string[] {
  const fields: string[] = [];
  for (const sensor of sensors) for (const f of SHOWN_FIELDS) fields.push(stateField(sensor, f));
  return fields;
}

/** What one device's state read asks for: shown fields of some data points, maybe their hours. */
export interface StateRead {
  fields: string[];
  /** Data points whose current hour is read too ([] for none). */
  hourSensors: readonly string[];
}

export function planStateRead(sensors: readonly string[], withHour: boolean): StateRead {
  return { fields: shownStateFields(sensors), hourSensors: withHour ? sensors : [] };
}

/** Queues the reads of `plan` on `pipe`: 2 replies, 3 with hours (see stateFromQueued). */
export function queueStateRead(
  pipe: ChainableCommander,
  keys: Keys,
  env: string,
  device: string,
  plan: StateRead,
): void {
  const key = keys.deviceState(env, device);
  pipe.hmget(key, ...plan.fields).hgetall(keys.deviceSuppressed(env, device));
  // Binary: read as Buffers, in a command of their own.
  if (plan.hourSensors.length > 0)
    pipe.hmgetBuffer(key, ...plan.hourSensors.map((s) => stateField(s, STATE_FIELD.hour)));
}

/** The state out of the replies queueStateRead queued, taken in order from `next`. */
export function stateFromQueued(plan: StateRead, next: () => unknown): DeviceStateHash {
  const state = stateFromReplies(plan.fields, next() as (string | null)[], next() as Record<string, string>);
  if (plan.hourSensors.length > 0) {
    const buffers = next() as (Buffer | null)[];
    state.hours = {};
    plan.hourSensors.forEach((sensor, i) => {
      const b = buffers[i];
      if (b && state.hours) state.hours[sensor] = b;
    });
  }
  return state;
}

const HOUR_MS = 3_600_000;
/** Field `h`: hour, count, total, min, max and a late flag as little-endian doubles. */
const HOUR_BYTES = 48;

/**
 * The last24Hours bucket of the clock hour holding `nowMs`, from a data point's state (read with
 * its hour): the bucket, null when no value came in that hour, undefined when the state cannot tell
 * and InfluxDB must be asked: a value of this hour came that did not become current (older than the
 * current one, or a repeat), or the current value is from this hour but no hour was kept with it
 * (state written before Vigil kept hours).
 */
export function currentHourOf(
  state: DeviceStateHash,
  sensor: string,
  nowMs: number,
): Bucket | null | undefined {
  const hour = Math.floor(nowMs / HOUR_MS);
  const kept = state.hours?.[sensor];
  if (kept?.length === HOUR_BYTES && kept.readDoubleLE(0) === hour) {
    const [count, total, min, max, late] = [8, 16, 24, 32, 40].map((at) => kept.readDoubleLE(at)) as [
      number,
      number,
      number,
      number,
      number,
    ];
    if (late !== 0) return undefined;
    const sUTC = hour * 3600;
    return { sUTC, eUTC: sUTC + 3600, count, total, max, min, avg: total / count };
  }
  const updatedMs = toMs(state.fields[stateField(sensor, STATE_FIELD.updated)]);
  return updatedMs !== null && Math.floor(updatedMs / HOUR_MS) === hour ? undefined : null;
}

/**
 * A device's state out of an HMGET of `fields` (`values` in the same order, null where absent) and
 * its suppressed hash.
 */
function stateFromReplies(
  fields: readonly string[],
  values: readonly (string | null)[],
  suppressed: Record<string, string>,
): DeviceStateHash {
  const state: DeviceStateHash = { fields: {}, suppressed: {} };
  for (let i = 0; i < fields.length; i++) {
    const v = values[i];
    if (v !== null && v !== undefined) state.fields[fields[i] ?? ''] = v;
  }
  state.suppressed = Object.fromEntries(
    Object.entries(suppressed).map(([sensor, until]) => [sensor, Number(until) || 0]),
  );
  return state;
}

/** Reads only `@lc` (last contact) of each device, in one pipeline; null = never posted. */
export async function readLastContacts(
  redis: Redis,
  keys: Keys,
  env: string,
  devices: readonly string[],
): Promise<(number | null)[]> {
  if (devices.length === 0) return [];
  const pipe = redis.pipeline();
  for (const d of devices) pipe.hget(keys.deviceState(env, d), DEVICE_FIELD.lastContact);
  const results = (await pipe.exec()) ?? [];
  return results.map(([err, value]) => {
    if (err) throw err;
    return toMs(value as string | null);
  });
}

/** The last contact of a device's state hash (epoch ms), or null. */
export const lastContactOf = (state: DeviceStateHash): number | null =>
  toMs(state.fields[DEVICE_FIELD.lastContact]);

/** One data point's state out of its device's hash; `nowMs` decides whether suppression expired. */
export function dataPointState(state: DeviceStateHash, sensor: string, nowMs: number): DataPointState {
  const f = (field: (typeof STATE_FIELD)[keyof typeof STATE_FIELD]) =>
    state.fields[stateField(sensor, field)];
  const raw = f(STATE_FIELD.value);
  const until = state.suppressed[sensor];
  return {
    value: raw === undefined ? null : parseValue(raw),
    status: f(STATE_FIELD.status) ?? 'SUCCESS',
    updatedMs: toMs(f(STATE_FIELD.updated)),
    lastSuccessMs: toMs(f(STATE_FIELD.lastSuccess)),
    statusSinceMs: toMs(f(STATE_FIELD.statusSince)),
    suppressed: until !== undefined && (until === 0 || until > nowMs),
  };
}

function parseValue(json: string): unknown {
  try {
    return JSON.parse(json) as unknown;
  } catch {
    return null;
  }
}

function toMs(v: string | null | undefined): number | null {
  if (v === null || v === undefined || v === '') return null;
  const n = Number(v);
  return Number.isFinite(n) ? n : null;
}
