/**
 * The three response shapes of a data point (docs/interface.md#data-point): sensors/list (lastSuccessAt,
 * currentSuccessAt, updatedAt), batchList (the UTC names) and details / batchDetails (the UTC names
 * plus last24Hours). Pure: state comes in decoded, the clock is passed in.
 */
import { DATA_TYPE_INFO, formatValue } from '../domain/data-types.ts';
import { isoUtc } from '../domain/time.ts';
import type { DataPointSpec, DataValue, Locale } from '../domain/types.ts';
import type { Bucket } from '../history/last-24-hours.ts';
import { dataPointState, type DeviceStateHash } from '../state/read-state.ts';
import type { DeviceRecord } from '../tenancy/types.ts';

interface CommonFields {
  sensorName: string;
  displayName: string;
  sensorType: string;
  currentValue: string | null;
  rawValue: DataValue | null;
  suppressed: boolean;
  currentStatus: string;
  units: string;
}

export interface ListedSensor extends CommonFields {
  lastSuccessAt: string | null;
  currentSuccessAt: string | null;
  updatedAt: string | null;
}

export interface SensorUtc extends CommonFields {
  timeSinceLastSuccessUTC: string | null;
  timeSinceCurrentStatusUTC: string | null;
  updatedUTC: string | null;
}

export interface SensorDetails extends SensorUtc {
  last24Hours: Bucket[];
}

export interface DeviceShape {
  deviceName: string;
  displayName: string;
  definitionIsPublic: boolean;
  definitionName: string;
  lastContactUTC: string | null;
  /** The device's labels ({} when none). */
  labels: Record<string, string>;
}

interface Shaping {
  state: DeviceStateHash;
  locale: Locale;
  nowMs: number;
}

function shapeCommon(dp: DataPointSpec, s: Shaping) {
  const st = dataPointState(s.state, dp.name, s.nowMs);
  const info = DATA_TYPE_INFO[dp.dataType];
  const value = st.value === null ? null : (st.value as DataValue);
  const common: CommonFields = {
    sensorName: dp.name,
    displayName: dp.displayName,
    sensorType: info.sensorType,
    currentValue: value === null ? null : formatValue(dp.dataType, value, s.locale),
    rawValue: value,
    suppressed: st.suppressed,
    currentStatus: st.status,
    units: info.units,
  };
  return { common, st };
}

/** sensors/list shape. */
export function listedSensor(dp: DataPointSpec, s: Shaping): ListedSensor {
  const { common, st } = shapeCommon(dp, s);
  return {
    ...common,
    lastSuccessAt: isoUtc(st.lastSuccessMs),
    currentSuccessAt: isoUtc(st.statusSinceMs),
    updatedAt: isoUtc(st.updatedMs),
  };
}

/** batchList shape (UTC names, no last24Hours). */
export function sensorUtc(dp: DataPointSpec, s: Shaping): SensorUtc {
  const { common, st } = shapeCommon(dp, s);
  return {
    ...common,
    timeSinceLastSuccessUTC: isoUtc(st.lastSuccessMs),
    timeSinceCurrentStatusUTC: isoUtc(st.statusSinceMs),
    updatedUTC: isoUtc(st.updatedMs),
  };
}

/** details / batchDetails shape. */
export function sensorDetails(dp: DataPointSpec, s: Shaping, last24Hours: Bucket[]): SensorDetails {
  return { ...sensorUtc(dp, s), last24Hours };
}

/** The Device shape; `lastContactMs` null for a device that never posted. */
export function deviceShape(d: DeviceRecord, lastContactMs: number | null): DeviceShape {
  return {
    deviceName: d.deviceName,
    displayName: d.displayName,
    definitionIsPublic: d.definitionIsPublic,
    definitionName: d.definitionName,
    lastContactUTC: isoUtc(lastContactMs),
    labels: { ...d.labels },
  };
}
