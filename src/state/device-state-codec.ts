/**
 * A device's state hash (state-keys.ts) to the state its owner decides on (domain/device-step.ts),
 * and what a step decided back to the writes that store it. The packed data point is point-record.ts's
 * codec; this file adds the device fields and the writes.
 */
import { emptyDevice, type DeviceOutcome, type DeviceState } from '../domain/device-step.ts';
import { AppError } from '../errors/app-error.ts';
import { decodePoint, encodePoint, POINT_LAYOUT } from './point-record.ts';
import { DEVICE_FIELD, STATE_FIELD } from './state-keys.ts';

/** Field of the state hash that names the version of the state written last (state-store.ts). */
export const VERSION_FIELD = DEVICE_FIELD.version;

/** A device's state as read, with the version it was read at ('' when none was written). */
export interface LoadedDevice {
  state: DeviceState;
  version: string;
}

/**
 * The device's state out of its hash (HGETALL, as Buffers). A data point stored in a layout this
 * version does not know fails the step (STATE_LAYOUT_UNKNOWN: no payload's fault), rather than being
 * taken for a fresh data point, which would be SUCCESS and make every stored problem a new event.
 */
export function decodeDeviceState(env: string, device: string, hash: Record<string, Buffer>): LoadedDevice {
  const state = emptyDevice();
  const f = state.fields;
  let version = '';
  for (const [field, raw] of Object.entries(hash)) {
    const at = field.lastIndexOf('|');
    if (at > 0) {
      const name = field.slice(0, at);
      const kind = field.slice(at + 1);
      let p = state.points.get(name);
      if (!p) {
        p = { name, record: null, valueJson: null, changed: false, valueChanged: false };
        state.points.set(name, p);
      }
      if (kind === STATE_FIELD.value) p.valueJson = raw.toString('utf8');
      else if (kind === STATE_FIELD.packed) p.record = pointOf(env, device, name, raw);
      continue;
    }
    const text = raw.toString('utf8');
    if (field === DEVICE_FIELD.lastContact) f.lastContactMs = Number(text);
    else if (field === DEVICE_FIELD.contactLost) f.lost = text === '1';
    else if (field === DEVICE_FIELD.deadline) f.deadlineMs = Number(text);
    else if (field === DEVICE_FIELD.timeout) f.timeoutMs = Number(text);
    else if (field === DEVICE_FIELD.timer) f.timerMs = Number(text);
    else if (field === DEVICE_FIELD.staleWaits) f.staleWaits = text === '1';
    else if (field === VERSION_FIELD) version = text;
  }
  return { state, version };
}

function pointOf(env: string, device: string, name: string, raw: Buffer) {
  const record = decodePoint(raw);
  if (record) return record;
  throw new AppError(
    'STATE_LAYOUT_UNKNOWN',
    `${env}/${device}: data point ${name} is stored in layout ${raw[0] ?? '?'}; this version of Vigil knows ${POINT_LAYOUT}`,
  );
}

/** HSET takes at most this many fields per command: a script unpacks each command's arguments. */
const FIELDS_PER_HSET = 1000;

/**
 * The state hash fields a step writes: the device fields that changed, each changed data point's
 * value and packed record, and the new version. Field names first, values after, as HSET takes them.
 */
export function stateWrites(state: DeviceState, outcome: DeviceOutcome, version: string): (string | Buffer)[][] {
  const flat: (string | Buffer)[] = [];
  const w = outcome.fieldWrites;
  const ms = (x: number | null | undefined) => String(x ?? 0);
  if (w.lastContactMs !== undefined) flat.push(DEVICE_FIELD.lastContact, ms(w.lastContactMs));
  if (w.timeoutMs !== undefined) flat.push(DEVICE_FIELD.timeout, ms(w.timeoutMs));
  if (w.deadlineMs !== undefined) flat.push(DEVICE_FIELD.deadline, ms(w.deadlineMs));
  if (w.lost !== undefined) flat.push(DEVICE_FIELD.contactLost, w.lost ? '1' : '0');
  if (w.timerMs !== undefined && w.timerMs !== null) flat.push(DEVICE_FIELD.timer, ms(w.timerMs));
  if (w.staleWaits !== undefined) flat.push(DEVICE_FIELD.staleWaits, w.staleWaits ? '1' : '0');
  for (const p of state.points.values()) {
    if (p.valueChanged && p.valueJson !== null) flat.push(`${p.name}|${STATE_FIELD.value}`, p.valueJson);
    if (p.changed && p.record) flat.push(`${p.name}|${STATE_FIELD.packed}`, encodePoint(p.record));
  }
  if (flat.length === 0) return [];
  flat.push(VERSION_FIELD, version);
  const out: (string | Buffer)[][] = [];
  for (let i = 0; i < flat.length; i += 2 * FIELDS_PER_HSET) out.push(flat.slice(i, i + 2 * FIELDS_PER_HSET));
  return out;
}
