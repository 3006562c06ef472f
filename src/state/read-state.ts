/**
 * The read side of current state: each device's state hash (`(StateKeys & TenancyKeys).deviceState`, fields
 * `<sensor>|<field>` and `@<field>`, see STATE_FIELD / DEVICE_FIELD) and its suppressed data points.
 * Callers put the reads in their own pipelines (planStateRead, queueStateRead, stateFromQueued) so
 * one round trip serves a whole request.
 */
import type { Bucket } from '../history/last-24-hours.ts';
import type { Redis } from '../redis/connect.ts';
import type { ReadCommands } from '../redis/pipelined-reads.ts';
import { decodeSuppressed } from '../tenancy/records.ts';
import { type StateKeys, DEVICE_FIELD, STATE_FIELD, stateField } from './state-keys.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import { AppError } from '../errors/app-error.ts';
import { decodePoint, POINT_LAYOUT, type PointRecord } from './point-record.ts';
import { historyVersionOf } from './history-version.ts';

/**
 * The stored state of one device, undecoded. By sensor name in Maps: in a plain object, a data
 * point named `constructor` would find Object's members, and one named `__proto__` could not be set.
 */
export interface DeviceStateHash {
  /** Values as JSON by sensor (`<sensor>|v`); empty when the device never posted. */
  values: Map<string, string>;
  /** Packed state by sensor (`<sensor>|p`), decoded once as read; absent before the first value, or when cut short. */
  points: Map<string, PointRecord>;
  /** Sensor → suppressed until (epoch ms; 0 = no expiry), as stored. */
  suppressed: ReadonlyMap<string, number>;
  /** The device's history version (`@hv`, history-version.ts); 0 when never bumped. */
  historyVersion: number;
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

/**
 * What one device's state read asks for: the value and packed fields of some data points, then the
 * device's history version (none when no data point is asked for).
 */
export interface StateRead {
  sensors: readonly string[];
  fields: string[];
}

export function planStateRead(sensors: readonly string[]): StateRead {
  const fields: string[] = [];
  for (const s of sensors) fields.push(stateField(s, STATE_FIELD.value), stateField(s, STATE_FIELD.packed));
  if (fields.length > 0) fields.push(DEVICE_FIELD.historyVersion);
  return { sensors, fields };
}

/** Queues the reads of `plan` on `pipe`: 2 replies (see stateFromQueued). */
export function queueStateRead(
  pipe: Pick<ReadCommands, 'hmgetBuffer' | 'hgetall'>,
  keys: StateKeys & TenancyKeys,
  env: string,
  device: string,
  plan: StateRead,
): void {
  // Buffers: the packed fields are binary.
  pipe.hmgetBuffer(keys.deviceState(env, device), ...plan.fields);
  pipe.hgetall(keys.deviceSuppressed(env, device));
}

/**
 * The state out of the replies queueStateRead queued, taken in order from `next`. A data point
 * stored in a layout this version does not know is refused (STATE_LAYOUT_UNKNOWN, 503) rather than
 * shown without its state, which would read as SUCCESS.
 */
export function stateFromQueued(plan: StateRead, next: () => unknown): DeviceStateHash {
  const replies = next() as (Buffer | null)[];
  const state: DeviceStateHash = {
    values: new Map(),
    points: new Map(),
    suppressed: decodeSuppressed(next() as Record<string, string>),
    historyVersion: historyVersionOf(replies[2 * plan.sensors.length]),
  };
  plan.sensors.forEach((sensor, i) => {
    const value = replies[2 * i];
    const packed = replies[2 * i + 1];
    if (value) state.values.set(sensor, value.toString('utf8'));
    if (!packed) return;
    if (packed[0] !== POINT_LAYOUT) throw unknownLayout(sensor, packed[0]);
    const point = decodePoint(packed);
    if (point) state.points.set(sensor, point);
  });
  return state;
}

const unknownLayout = (sensor: string, layout: number | undefined) =>
  new AppError(
    'STATE_LAYOUT_UNKNOWN',
    `Data point ${sensor} is stored in layout ${layout ?? 'none'}, which this version of Vigil cannot read (a newer version wrote it, or a migration has not run); try again once the upgrade is complete.`,
    { details: { sensorName: sensor } },
  );

/** A device's state before its first value. */
export const emptyState = (): DeviceStateHash => ({
  values: new Map(),
  points: new Map(),
  suppressed: new Map(),
  historyVersion: 0,
});

const HOUR_MS = 3_600_000;

/**
 * The last24Hours bucket of the clock hour holding `nowMs`, from a data point's state: the bucket,
 * null when no value came in that hour, undefined when the state cannot tell and InfluxDB must be
 * asked: a value of this hour came that did not become current (older than the current one, or a
 * repeat), or the current value is from this hour but no hour was kept with it.
 */
export function currentHourOf(
  state: DeviceStateHash,
  sensor: string,
  nowMs: number,
): Bucket | null | undefined {
  const hour = Math.floor(nowMs / HOUR_MS);
  const point = state.points.get(sensor);
  const kept = point?.hour;
  if (kept?.hour === hour) {
    if (kept.late) return undefined;
    const sUTC = hour * 3600;
    const { count, total, min, max } = kept;
    return { sUTC, eUTC: sUTC + 3600, count, total, max, min, avg: total / count };
  }
  return point && Math.floor(point.updatedMs / HOUR_MS) === hour ? undefined : null;
}

/** Reads only `@lc` (last contact) of each device, in one pipeline; null = never posted. */
export async function readLastContacts(
  redis: Redis,
  keys: StateKeys & TenancyKeys,
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

/** One data point's state out of its device's hash; `nowMs` decides whether suppression expired. */
export function dataPointState(state: DeviceStateHash, sensor: string, nowMs: number): DataPointState {
  const raw = state.values.get(sensor);
  const point = state.points.get(sensor);
  const until = state.suppressed.get(sensor);
  return {
    value: raw === undefined ? null : parseValue(raw),
    status: point?.status ?? 'SUCCESS',
    updatedMs: point?.updatedMs ?? null,
    lastSuccessMs: point?.lastSuccessMs ?? null,
    statusSinceMs: point?.statusSinceMs ?? null,
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
