/**
 * The read side of current state: each device's state hash (`Keys.deviceState`, fields
 * `<sensor>|<field>` and `@<field>`, see STATE_FIELD / DEVICE_FIELD) and its suppressed data points,
 * for any number of devices in one pipelined round trip.
 */
import type { Redis } from '../redis/connect.ts';
import { DEVICE_FIELD, STATE_FIELD, stateField, type Keys } from './keys.ts';

/** The stored state of one device, undecoded. */
export interface DeviceStateHash {
  /** The `deviceState` hash ({} when the device never posted). */
  fields: Record<string, string>;
  /** Sensor → suppressed until (epoch ms; 0 = no expiry), as stored. */
  suppressed: Record<string, number>;
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

/** Reads the state hash and suppressed hash of each device, in order, in one pipeline. */
export async function readDeviceStates(
  redis: Redis,
  keys: Keys,
  env: string,
  devices: readonly string[],
): Promise<DeviceStateHash[]> {
  if (devices.length === 0) return [];
  const pipe = redis.pipeline();
  for (const d of devices) pipe.hgetall(keys.deviceState(env, d)).hgetall(keys.deviceSuppressed(env, d));
  const results = (await pipe.exec()) ?? [];
  const values = results.map(([err, value]) => {
    if (err) throw err;
    return (value ?? {}) as Record<string, string>;
  });
  return devices.map((_, i) => ({
    fields: values[2 * i] ?? {},
    suppressed: Object.fromEntries(
      Object.entries(values[2 * i + 1] ?? {}).map(([s, until]) => [s, Number(until) || 0]),
    ),
  }));
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
