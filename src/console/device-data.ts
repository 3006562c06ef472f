/**
 * One device as its console page shows it: its data points with formatted current value, status
 * and since when, its open alarms, its events and its recent payloads (its charts: device-charts.ts).
 */
import { serveAlarm, type ServedAlarm } from '../alerting/alarms.ts';
import { formatValue, isNumericDataType } from '../domain/data-types.ts';
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
import type { Redis } from '../redis/connect.ts';
import { alarmMember, decodeAlarm } from '../state/alarm-index.ts';
import {
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
import { severityOf, worseOf } from './fleet-data.ts';

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
  /** How its history is charted; null: not at all (text, GPS positions). */
  chart: ChartKind | null;
}

/** A numeric data point's hourly band with its recent values, or a boolean's values as steps. */
export type ChartKind = 'band' | 'steps';

export const chartKindOf = (dataType: DataType): ChartKind | null =>
  isNumericDataType(dataType) ? 'band' : dataType === 'boolean' ? 'steps' : null;

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
  /** Its open alarms, most severe first, then oldest: read with its state, so they agree with `status`. */
  alarms: ServedAlarm[];
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
  const alarmMembers = [null, ...(spec?.dataPoints ?? []).map((d) => d.name)].map((s) =>
    alarmMember(name, s),
  );
  // One transaction: the state scripts write a data point's status and its alarm in one step, so the
  // page's status and its alarm rows come from the same moment.
  const tx = redis.multi();
  tx.hget(keys.env(env), 'locale');
  tx.hmget(keys.deviceState(env, name), DEVICE_FIELD.lastContact, DEVICE_FIELD.contactLost);
  tx.hmget(keys.alarmRecords(env), ...alarmMembers);
  if (plan.fields.length > 0) queueStateRead(tx, keys, env, name, plan);
  const [replies, events, payloads] = await Promise.all([
    tx.exec().then((r) => pipelineValues<unknown>(r)),
    listEvents(redis, keys, { env, device: name, limit: EVENTS_SHOWN }),
    listRecentPayloads(redis, keys, env, name, PAYLOADS_SHOWN),
  ]);
  let at = 0;
  const next = () => replies[at++];
  const locale: Locale = next() === 'nl' ? 'nl' : 'en';
  const [lc, lost] = next() as (string | null)[];
  const alarms = openAlarms(next() as (string | null)[], device.displayName);
  const state: DeviceStateHash | null = plan.fields.length > 0 ? stateFromQueued(plan, next) : null;
  const points = (spec?.dataPoints ?? []).map((dp) =>
    pointView(dp, state, overrides.get(dp.name) ?? defaultRules(dp), locale, nowMs),
  );
  const silent = lost === '1';
  const silentStatus: Status = spec?.availability?.status ?? 'ERROR';
  const lastContactMs = lc ? Number(lc) : null;
  let status: Status | null = null;
  for (const p of points) if (p.updatedMs !== null && !p.suppressed) status = worseOf(status, p.status);
  if (silent) status = worseOf(status, silentStatus);
  else if (status === null && lastContactMs !== null) status = 'SUCCESS';
  return {
    device,
    spec,
    locale,
    lastContactMs,
    silent,
    silentStatus,
    status,
    points,
    alarms,
    events,
    payloads,
  };
}

/** One data point as the page shows it, from the device's state (null before any value). */
function pointView(
  dp: DataPointSpec,
  state: DeviceStateHash | null,
  rules: ThresholdSet,
  locale: Locale,
  nowMs: number,
): DevicePoint {
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
    pending: record ? pendingOf(record, rules, dp.dataType, locale) : null,
    stale: record?.rule === STALE_RULE,
    chart: chartKindOf(dp.dataType),
  };
}

/** The device's alarm records as served, most severe first, then oldest (the alarm index's order). */
function openAlarms(records: readonly (string | null)[], displayName: string): ServedAlarm[] {
  return records
    .flatMap((json) => (json === null ? [] : [decodeAlarm(json)]))
    .sort((a, b) => severityOf(b.status) - severityOf(a.status) || a.openedMs - b.openedMs)
    .map((a) => serveAlarm(a, displayName));
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
