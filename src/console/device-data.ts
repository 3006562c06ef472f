/**
 * One device as its console page shows it: its data points with formatted current value, status
 * and since when, its events, its recent payloads, and the chart data of its numeric data points
 * (hourly min/avg/max of the last 24 hours, and the raw values of the last hours).
 */
import { DATA_TYPE_INFO, formatValue, isNumericDataType } from '../domain/data-types.ts';
import { ruleEventText } from '../domain/rule-text.ts';
import { thresholdFingerprint } from '../domain/thresholds.ts';
import type {
  DataPointSpec,
  DataType,
  DataValue,
  DefinitionSpec,
  Locale,
  Status,
  ThresholdSet,
} from '../domain/types.ts';
import { STALE_RULE, type PointRecord } from '../state/point-record.ts';
import { listEvents, type ServedEvent } from '../events/list-events.ts';
import type { EventKeys } from '../events/event-keys.ts';
import type { Bucket } from '../history/last-24-hours.ts';
import type { Last24HoursReader } from '../history/last-24-hours-reader.ts';
import type { InfluxClient } from '../history/influx-client.ts';
import { queryRecentValues } from '../history/recent-values.ts';
import type { Redis } from '../redis/connect.ts';
import {
  currentHourOf,
  dataPointState,
  planStateRead,
  queueStateRead,
  stateFromQueued,
  type DeviceStateHash,
} from '../state/read-state.ts';
import { DEVICE_FIELD, type StateKeys } from '../state/state-keys.ts';
import { pipelineValues } from '../tenancy/records.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { TenancyStore } from '../tenancy/tenancy-store.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import { listRecentPayloads } from '../recent-payloads/list-recent-payloads.ts';
import type { RecentPayload } from '../recent-payloads/recent-payload-codec.ts';
import type { RecentPayloadKeys } from '../recent-payloads/recent-payload-keys.ts';
import { worseOf } from './fleet-data.ts';

/** A status that holds but has not held as long as its rule asks (`for`): not yet entered. */
export interface PendingStatus {
  status: Status;
  /** The rule's event text (`Overheating for 10 min`). */
  text: string;
  /** Epoch ms (measurement time) since the condition holds. */
  sinceMs: number;
  /** How long it must hold, in ms. */
  forMs: number;
}

export interface DevicePoint {
  sensorName: string;
  displayName: string;
  dataType: DataType;
  /** The current value as formatted (currentValue), or null before the first. */
  value: string | null;
  status: Status;
  sinceMs: number | null;
  updatedMs: number | null;
  suppressed: boolean;
  /**
   * The most severe status a rule that waits (`for`) would enter once its condition has held long
   * enough; null when none is pending.
   */
  pending: PendingStatus | null;
  /** Its status comes from its stale rule: no value for a while. */
  stale: boolean;
  numeric: boolean;
}

export interface DeviceView {
  device: DeviceRecord;
  spec: DefinitionSpec | null;
  locale: Locale;
  lastContactMs: number | null;
  silent: boolean;
  silentStatus: Status;
  /** Most severe of its (unsuppressed) data points and its silence; null before any data. */
  status: Status | null;
  points: DevicePoint[];
  events: ServedEvent[];
  payloads: RecentPayload[];
}

/** Events and payloads shown on the page. */
const EVENTS_SHOWN = 25;
const PAYLOADS_SHOWN = 20;

export type DeviceReadKeys = TenancyKeys & StateKeys & EventKeys & RecentPayloadKeys;

/** The device's view, or null when the environment has no such device. */
export async function readDevice(
  deps: { redis: Redis; keys: DeviceReadKeys; tenancy: TenancyStore },
  env: string,
  name: string,
  nowMs: number,
): Promise<DeviceView | null> {
  const { redis, keys, tenancy } = deps;
  const device = await tenancy.getDevice(env, name);
  if (!device) return null;
  const [definition, overrides] = await Promise.all([
    tenancy.getDefinition(env, device.definitionName, device.definitionIsPublic),
    tenancy.getThresholdOverrides(env, name),
  ]);
  const spec = definition?.spec ?? null;
  const plan = planStateRead((spec?.dataPoints ?? []).map((d) => d.name));
  const pipe = redis.pipeline();
  pipe.hget(keys.env(env), 'locale');
  pipe.hmget(keys.deviceState(env, name), DEVICE_FIELD.lastContact, DEVICE_FIELD.contactLost);
  if (plan.fields.length > 0) queueStateRead(pipe, keys, env, name, plan);
  const [replies, events, payloads] = await Promise.all([
    pipe.exec().then((r) => pipelineValues<unknown>(r)),
    listEvents(redis, keys, { env, device: name, limit: EVENTS_SHOWN }),
    listRecentPayloads(redis, keys, env, name, PAYLOADS_SHOWN),
  ]);
  let at = 0;
  const next = () => replies[at++];
  const locale: Locale = next() === 'nl' ? 'nl' : 'en';
  const [lc, lost] = next() as (string | null)[];
  const state: DeviceStateHash | null = plan.fields.length > 0 ? stateFromQueued(plan, next) : null;
  const points = (spec?.dataPoints ?? []).map((dp): DevicePoint => {
    const st = state ? dataPointState(state, dp.name, nowMs) : null;
    const record = state?.points.get(dp.name);
    const hasValue = st !== null && st.value !== null;
    return {
      sensorName: dp.name,
      displayName: dp.displayName,
      dataType: dp.dataType,
      value: hasValue ? formatValue(dp.dataType, st.value as DataValue, locale) : null,
      status: (st?.status ?? 'SUCCESS') as Status,
      sinceMs: st?.statusSinceMs ?? null,
      updatedMs: st?.updatedMs ?? null,
      suppressed: st?.suppressed ?? false,
      pending: record
        ? pendingOf(record, overrides.get(dp.name) ?? defaultRules(dp), dp.dataType, locale)
        : null,
      stale: record?.rule === STALE_RULE,
      numeric: isNumericDataType(dp.dataType),
    };
  });
  const silent = lost === '1';
  const silentStatus: Status = spec?.availability?.status ?? 'ERROR';
  const lastContactMs = lc ? Number(lc) : null;
  let status: Status | null = null;
  for (const p of points) if (p.updatedMs !== null && !p.suppressed) status = worseOf(status, p.status);
  if (silent) status = worseOf(status, silentStatus);
  else if (status === null && lastContactMs !== null) status = 'SUCCESS';
  return { device, spec, locale, lastContactMs, silent, silentStatus, status, points, events, payloads };
}

const defaultRules = (dp: DataPointSpec): ThresholdSet => ({
  rules: dp.thresholds,
  hysteresis: dp.hysteresis,
  ...(dp.stale ? { stale: dp.stale } : {}),
});

/**
 * The most severe rule the current value meets that waits and whose duration is not met yet: the
 * first held rule (point-record.ts, preference order) whose deadline is after the data point's
 * effective time. None when the rules changed since the value came (their fingerprint differs).
 */
export function pendingOf(
  point: PointRecord,
  set: ThresholdSet,
  dataType: DataType,
  locale: Locale,
): PendingStatus | null {
  if (point.rulesId !== thresholdFingerprint(set)) return null;
  for (const h of point.held) {
    const rule = set.rules[h.rule];
    if (!rule?.forMs || h.sinceMs === null) continue;
    if (h.sinceMs + rule.forMs <= point.updatedMs) return null;
    return {
      status: rule.status,
      text: ruleEventText(rule, dataType, locale),
      sinceMs: h.sinceMs,
      forMs: rule.forMs,
    };
  }
  return null;
}

/** One numeric data point's chart: hourly buckets and recent raw values (times in UNIX seconds). */
export interface PointChart {
  sensorName: string;
  label: string;
  units: string;
  /** Hour starts, UNIX seconds; min, avg and max of each hour. */
  hours: { t: number[]; min: number[]; avg: number[]; max: number[] };
  /** Raw values of the last RAW_HOURS hours. */
  raw: { t: number[]; v: number[] };
}

/** Hours of raw values drawn over the hourly band. */
export const RAW_HOURS = 3;
/** Most raw values drawn per data point. */
const MAX_RAW_VALUES = 2000;

export async function readCharts(
  deps: { influx: InfluxClient; last24Hours: Last24HoursReader; redis: Redis; keys: TenancyKeys & StateKeys },
  env: string,
  view: DeviceView,
  nowMs: number,
): Promise<PointChart[]> {
  const numeric = view.points.filter((p) => p.numeric);
  if (numeric.length === 0) return [];
  const device = view.device.deviceName;
  // The current hour from state where it is kept (as the read API's last24Hours does).
  const plan = planStateRead(numeric.map((p) => p.sensorName));
  const pipe = deps.redis.pipeline();
  queueStateRead(pipe, deps.keys, env, device, plan);
  const replies = pipelineValues<unknown>(await pipe.exec());
  let at = 0;
  const state = stateFromQueued(plan, () => replies[at++]);
  const items = numeric.map((p) => {
    const current = currentHourOf(state, p.sensorName, nowMs);
    return current === undefined
      ? { device, sensor: p.sensorName }
      : { device, sensor: p.sensorName, current };
  });
  const [buckets, raw] = await Promise.all([
    deps.last24Hours(env, items, nowMs),
    queryRecentValues(deps.influx, {
      env,
      device,
      sensors: numeric.map((p) => p.sensorName),
      sinceMs: nowMs - RAW_HOURS * 3_600_000,
      maxPerSensor: MAX_RAW_VALUES,
    }),
  ]);
  return numeric.map((p) => ({
    sensorName: p.sensorName,
    label: p.displayName,
    units: DATA_TYPE_INFO[p.dataType].units.trim(),
    hours: hoursOf(buckets.get(`${device}|${p.sensorName}`) ?? []),
    raw: rawOf(raw.get(p.sensorName)),
  }));
}

function hoursOf(buckets: readonly Bucket[]): PointChart['hours'] {
  const out: PointChart['hours'] = { t: [], min: [], avg: [], max: [] };
  for (const b of buckets) {
    // The middle of the hour, so that the band lines up with the raw values in it.
    out.t.push(b.sUTC + 1800);
    out.min.push(b.min);
    out.avg.push(b.avg);
    out.max.push(b.max);
  }
  return out;
}

function rawOf(series: { timesMs: number[]; values: number[] } | undefined): PointChart['raw'] {
  return { t: (series?.timesMs ?? []).map((ms) => ms / 1000), v: series?.values ?? [] };
}
