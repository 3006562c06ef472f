/**
 * The fleet of an environment as the console shows it: every device with its labels, its most
 * severe current status, the data points that are not SUCCESS, its last contact and whether it
 * went silent. Read
 * from Redis in three pipelined round trips (device names; device records, state hashes and
 * suppressions; the definitions in use), so 1,000 devices cost one read of about 3,000 commands.
 * The console shares one read per environment among its pages and clients (live.ts).
 */
import { formatValue } from '../domain/data-types.ts';
import { STATUSES, type DataPointSpec, type DefinitionSpec, type Locale, type Status } from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import { decodePoint, POINT_LAYOUT } from '../state/point-record.ts';
import { DEVICE_FIELD, type StateKeys } from '../state/state-keys.ts';
import { decodeDevice, decodeSuppressed, pipelineValues } from '../tenancy/records.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import { scopeOf } from '../tenancy/tenancy-store.ts';
import type { DeviceRecord } from '../tenancy/types.ts';

/** A data point of a device that is not SUCCESS. */
export interface FleetPoint {
  sensorName: string;
  displayName: string;
  status: Status;
  /** Epoch ms the status was entered, or null. */
  sinceMs: number | null;
  /** The current value as formatted, or null. */
  value: string | null;
  suppressed: boolean;
}

export interface FleetDevice {
  deviceName: string;
  displayName: string;
  definitionName: string;
  definitionIsPublic: boolean;
  /** Its labels by key (`site: amsterdam`); {} when none. */
  labels: Readonly<Record<string, string>>;
  /** Most severe status of its data points (suppressed ones left out) and of its silence; null before any data. */
  status: Status | null;
  lastContactMs: number | null;
  /** Its contact is lost (an Availability event is open). */
  silent: boolean;
  /** The status its definition gives a lost contact. */
  silentStatus: Status;
  /** Its data points that are not SUCCESS, most severe first. */
  problems: FleetPoint[];
}

/** Devices per status; `SILENT` and `NO_DATA` besides. */
export type FleetCounts = Record<Status | 'SILENT' | 'NO_DATA', number>;

export interface FleetSnapshot {
  env: string;
  locale: Locale;
  /** Most severe first, then by device name. */
  devices: FleetDevice[];
  counts: FleetCounts;
  /** Epoch ms of the read. */
  readMs: number;
}

export const severityOf = (status: Status | null): number => (status === null ? -1 : STATUSES.indexOf(status));

export function worseOf(a: Status | null, b: Status | null): Status | null {
  return severityOf(b) > severityOf(a) ? b : a;
}

export async function readFleet(
  redis: Redis,
  keys: TenancyKeys & StateKeys,
  env: string,
  nowMs: number,
): Promise<FleetSnapshot> {
  const [names, localeText] = pipelineValues<unknown>(
    await redis.pipeline().zrange(keys.devices(env), 0, -1).hget(keys.env(env), 'locale').exec(),
  ) as [string[], string | null];
  const locale: Locale = localeText === 'nl' ? 'nl' : 'en';
  const pipe = redis.pipeline();
  for (const n of names) {
    pipe.hgetall(keys.device(env, n));
    pipe.hgetallBuffer(keys.deviceState(env, n));
    pipe.hgetall(keys.deviceSuppressed(env, n));
  }
  const replies = pipelineValues<unknown>(await pipe.exec());
  const records = names.map((n, i) => decodeDevice(env, n, replies[3 * i] as Record<string, string>));
  const definitions = await readDefinitions(redis, keys, env, records);
  const devices: FleetDevice[] = [];
  records.forEach((record, i) => {
    if (!record) return;
    const spec = definitions.get(definitionKey(record)) ?? null;
    const state = replies[3 * i + 1] as Record<string, Buffer>;
    const suppressed = decodeSuppressed(replies[3 * i + 2] as Record<string, string>);
    devices.push(fleetDevice(record, spec, state, suppressed, locale, nowMs));
  });
  devices.sort(
    (a, b) =>
      severityOf(b.status) - severityOf(a.status) ||
      (a.deviceName < b.deviceName ? -1 : a.deviceName > b.deviceName ? 1 : 0),
  );
  return { env, locale, devices, counts: countsOf(devices), readMs: nowMs };
}

const definitionKey = (d: Pick<DeviceRecord, 'definitionName' | 'definitionIsPublic'>) =>
  `${d.definitionIsPublic ? 'public' : 'private'}\n${d.definitionName}`;

async function readDefinitions(
  redis: Redis,
  keys: TenancyKeys,
  env: string,
  records: (DeviceRecord | null)[],
): Promise<Map<string, DefinitionSpec>> {
  const wanted = new Map<string, DeviceRecord>();
  for (const r of records) if (r) wanted.set(definitionKey(r), r);
  const list = [...wanted];
  if (list.length === 0) return new Map();
  const pipe = redis.pipeline();
  for (const [, r] of list) pipe.hget(keys.definition(scopeOf(env, r.definitionIsPublic), r.definitionName), 'spec');
  const texts = pipelineValues<string | null>(await pipe.exec());
  const out = new Map<string, DefinitionSpec>();
  list.forEach(([key], i) => {
    const text = texts[i];
    if (text) out.set(key, JSON.parse(text) as DefinitionSpec);
  });
  return out;
}

function fleetDevice(
  record: DeviceRecord,
  spec: DefinitionSpec | null,
  state: Record<string, Buffer>,
  suppressed: ReadonlyMap<string, number>,
  locale: Locale,
  nowMs: number,
): FleetDevice {
  const lc = state[DEVICE_FIELD.lastContact]?.toString();
  const lastContactMs = lc ? Number(lc) : null;
  const silent = state[DEVICE_FIELD.contactLost]?.toString() === '1';
  const silentStatus: Status = spec?.availability?.status ?? 'ERROR';
  const problems: FleetPoint[] = [];
  let status: Status | null = null;
  for (const dp of spec?.dataPoints ?? []) {
    const packed = state[`${dp.name}|p`];
    if (!packed) continue;
    if (packed[0] !== POINT_LAYOUT) {
      throw new AppError('STATE_LAYOUT_UNKNOWN', `Data point ${dp.name} is stored in a layout this version cannot read.`);
    }
    const point = decodePoint(packed);
    if (!point) continue;
    const until = suppressed.get(dp.name);
    const isSuppressed = until !== undefined && (until === 0 || until > nowMs);
    const pointStatus = point.status as Status;
    if (!isSuppressed) status = worseOf(status, pointStatus);
    if (pointStatus !== 'SUCCESS') problems.push(problemOf(dp, pointStatus, point.statusSinceMs, state, locale, isSuppressed));
  }
  if (silent) status = worseOf(status, silentStatus);
  else if (status === null && lastContactMs !== null) status = 'SUCCESS';
  problems.sort((a, b) => severityOf(b.status) - severityOf(a.status));
  return {
    deviceName: record.deviceName,
    displayName: record.displayName,
    definitionName: record.definitionName,
    definitionIsPublic: record.definitionIsPublic,
    labels: record.labels,
    status,
    lastContactMs,
    silent,
    silentStatus,
    problems,
  };
}

function problemOf(
  dp: DataPointSpec,
  status: Status,
  sinceMs: number | null,
  state: Record<string, Buffer>,
  locale: Locale,
  suppressed: boolean,
): FleetPoint {
  const json = state[`${dp.name}|v`]?.toString();
  let value: string | null = null;
  if (json !== undefined) {
    try {
      value = formatValue(dp.dataType, JSON.parse(json) as never, locale);
    } catch {
      value = null;
    }
  }
  return { sensorName: dp.name, displayName: dp.displayName, status, sinceMs, value, suppressed };
}

function countsOf(devices: readonly FleetDevice[]): FleetCounts {
  const counts: FleetCounts = { SUCCESS: 0, INFO: 0, WARNING: 0, ERROR: 0, CRITICAL: 0, SILENT: 0, NO_DATA: 0 };
  for (const d of devices) {
    if (d.status === null) counts.NO_DATA += 1;
    else counts[d.status] += 1;
    if (d.silent) counts.SILENT += 1;
  }
  return counts;
}
