/**
 * Step 4: convert each returned value to its data point's type, format it, and precompute its
 * threshold outcome for every possible previous rule, grouped per device for the state step. Each
 * value becomes one object that serves both the state step and its history line.
 *
 * Everything looked up by a data point's name is in a Map: names such as `constructor` or
 * `__proto__` are valid, and would find Object.prototype's members in a plain object.
 */
import {
  DATA_TYPE_INFO,
  acceptedNumber,
  convertValue,
  formatNumberText,
  formatValue,
  numericValue,
} from '../domain/data-types.ts';
import { fingerprintSeed, offsetFromSeed, payloadFingerprint } from '../domain/history-offset.ts';
import { possibleRules, ruleDescription, thresholdFingerprint } from '../domain/thresholds.ts';
import type {
  DataPointSpec,
  DataValue,
  DefinitionSpec,
  Locale,
  Status,
  ThresholdSet,
} from '../domain/types.ts';
import { valueFieldText, valueLinePrefix } from '../history/history-writer.ts';
import type { DeviceReadings, SensorMeta, StateValue } from '../state/state-store.ts';
import type { DeviceSettings } from '../tenancy/tenancy-store.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import type { Catalog } from './catalog.ts';
import type { OutcomeLog } from './outcomes.ts';
import type { ParsedReading } from './parse.ts';

/** A converted value: what the state step applies, and what its history line is made of. */
export interface ConvertedValue extends StateValue {
  /** The line up to its fields (valueLinePrefix), shared by the values of one data point in a step. */
  linePrefix: string;
  /** The value's line protocol fields (valueFieldText; '' when it has none to write). */
  fieldText: string;
  /**
   * The status without hysteresis context, which history keeps when the state step does not
   * apply the value (older than the stored one); otherwise the state step's status replaces it.
   */
  status: Status;
}

/** A device's readings for the state step, with its values' history parts. */
export interface ConvertedDevice extends DeviceReadings {
  values: ConvertedValue[];
}

export async function convertReadings(
  parsed: ParsedReading[],
  deps: { catalog: Catalog; outcomes: OutcomeLog; defaultAvailabilityMinutes: number; nowMs: number },
): Promise<ConvertedDevice[]> {
  const { catalog, outcomes, nowMs } = deps;
  // Device records are the catalog's cached objects, one per device in a step: grouping by the
  // object needs no key string per reading.
  const byDevice = new Map<DeviceRecord, ParsedReading[]>();
  for (const p of parsed) {
    const list = byDevice.get(p.device);
    if (list) list.push(p);
    else byDevice.set(p.device, [p]);
  }
  const namesByEnv = new Map<string, string[]>();
  for (const [device, group] of byDevice) {
    const env = group[0]!.item.env;
    const names = namesByEnv.get(env);
    if (names) names.push(device.deviceName);
    else namesByEnv.set(env, [device.deviceName]);
  }
  // Everything the devices need, read up front: the loop below never awaits. An await per device
  // let the worker's other step loops run in between, and a step of 250 devices then took seconds.
  const envs = [...namesByEnv.keys()];
  const [environments, settings] = await Promise.all([
    Promise.all(envs.map(async (env) => [env, await catalog.environment(env)] as const)),
    Promise.all(
      [...namesByEnv].map(async ([env, names]) => [env, await catalog.deviceSettings(env, names)] as const),
    ),
  ]);
  const environmentOf = new Map(environments);
  const settingsOf = new Map(settings);
  const devices: ConvertedDevice[] = [];
  for (const [device, group] of byDevice) {
    const first = group[0]!;
    const env = first.item.env;
    const definition = first.definition;
    const deviceSettings = settingsOf.get(env)?.get(device.deviceName);
    const context: DeviceContext = {
      env,
      device: device.deviceName,
      locale: environmentOf.get(env)?.locale ?? 'en',
      points: dataPointsByName(definition.spec),
      overrides: deviceSettings?.overrides,
      suppressed: deviceSettings?.suppressed,
      nowMs,
      sensors: new Map(),
      parts: new Map(),
    };
    const values: ConvertedValue[] = [];
    let contactMs = 0;
    for (const r of group) {
      if (r.item.receivedMs > contactMs) contactMs = r.item.receivedMs;
      convertReading(r, context, values, outcomes);
    }
    if (!isSorted(values)) values.sort((a, b) => a.timeMs - b.timeMs || a.offsetNs - b.offsetNs);
    const minutes =
      device.availabilityMinutes ??
      definition.spec.availability?.timeoutMinutes ??
      deps.defaultAvailabilityMinutes;
    devices.push({
      env,
      device: device.deviceName,
      displayName: device.displayName,
      contactMs,
      timeoutMs: Math.round(minutes * 60_000),
      sensors: context.sensors,
      values,
    });
  }
  return devices;
}

/** What converting one device's values needs, and what it builds up once per device and step. */
interface DeviceContext {
  env: string;
  device: string;
  locale: Locale;
  points: Map<string, DataPointSpec>;
  overrides: DeviceSettings['overrides'] | undefined;
  suppressed: DeviceSettings['suppressed'] | undefined;
  nowMs: number;
  /** Rule metadata of each data point with a value (the state step's `sensors`). */
  sensors: Map<string, SensorMeta>;
  /** What the values of each data point with a value share. */
  parts: Map<string, PointParts>;
}

/** What the values of one data point of a device share in a step. */
interface PointParts {
  set: ThresholdSet;
  meta: SensorMeta;
  /** valueLinePrefix of the data point. */
  linePrefix: string;
}

/** Converts the values of one reading into `values`; problems go to the ingestion log. */
function convertReading(
  r: ParsedReading,
  ctx: DeviceContext,
  values: ConvertedValue[],
  outcomes: OutcomeLog,
): void {
  const seed = fingerprintSeed(payloadFingerprint(`${r.deviceName}\n${r.payloadStr}`));
  let position = 0;
  let accepted = 0;
  let unknown: string[] | undefined;
  const returned = r.values;
  // The parser's result is a plain object fresh from JSON: for…in sees its own keys, in
  // Object.keys order (the position below must stay that order: it fixes each history point).
  // JSON.parse makes a key `__proto__` an own property, which returned[key] reads like any other.
  for (const key in returned) {
    position += 1;
    const dp = ctx.points.get(key);
    if (!dp) {
      (unknown ??= []).push(key);
      continue;
    }
    const input = returned[key];
    let value: DataValue | undefined =
      typeof input === 'number' ? acceptedNumber(dp.dataType, input) : undefined;
    if (value === undefined) {
      const converted = convertValue(dp.dataType, input);
      if (converted === null) continue;
      if (!converted.ok) {
        outcomes.problem(r.item, 'VALUE_CONVERSION_FAILED', `${key}: ${converted.reason}`, r.deviceName);
        continue;
      }
      value = converted.value;
    }
    values.push(convertedValue(ctx, dp, key, value, r.timeMs, offsetFromSeed(seed, position)));
    accepted += 1;
  }
  if (unknown) {
    outcomes.problem(
      r.item,
      'UNKNOWN_DATA_POINT',
      `not data points of ${r.definition.spec.name}: ${unknown.slice(0, 10).join(', ')}`,
      r.deviceName,
    );
  }
  outcomes.accepted(r.item, accepted);
}

function convertedValue(
  ctx: DeviceContext,
  dp: DataPointSpec,
  sensor: string,
  value: DataValue,
  timeMs: number,
  offsetNs: number,
): ConvertedValue {
  let parts = ctx.parts.get(sensor);
  if (!parts) {
    const set = ctx.overrides?.get(sensor) ?? defaultSet(dp);
    const until = ctx.suppressed?.get(sensor);
    const meta = ruleMeta(set, dp, ctx.locale, until !== undefined && (until === 0 || until > ctx.nowMs));
    parts = { set, meta, linePrefix: valueLinePrefix(ctx.env, ctx.device, sensor, meta.sensorType) };
    ctx.parts.set(sensor, parts);
    ctx.sensors.set(sensor, meta);
  }
  const { set, meta, linePrefix } = parts;
  const outcomes = possibleRules(value, set);
  const rule = outcomes[0]!;
  const status: Status = rule >= 0 ? (meta.statuses[rule] ?? 'SUCCESS') : 'SUCCESS';
  if (typeof value === 'number') {
    // One number-to-text for the state's JSON, the shown value and the history field.
    const text = String(value);
    const info = DATA_TYPE_INFO[dp.dataType];
    return {
      sensor,
      timeMs,
      offsetNs,
      valueJson: text,
      currentValue: formatNumberText(value, text, ctx.locale, info.decimals) + info.units,
      outcomes,
      number: dp.dataType === 'string' ? null : value,
      linePrefix,
      fieldText: `value=${text}`,
      status,
    };
  }
  return {
    sensor,
    timeMs,
    offsetNs,
    valueJson: JSON.stringify(value),
    currentValue: formatValue(dp.dataType, value, ctx.locale),
    outcomes,
    number: numericValue(dp.dataType, value),
    linePrefix,
    fieldText: valueFieldText(value),
    status,
  };
}

function isSorted(values: readonly StateValue[]): boolean {
  for (let i = 1; i < values.length; i++) {
    const a = values[i - 1]!;
    const b = values[i]!;
    if (a.timeMs > b.timeMs || (a.timeMs === b.timeMs && a.offsetNs > b.offsetNs)) return false;
  }
  return true;
}

/** A definition's data points by name, made once per definition version (cached objects). */
const byName = new WeakMap<DefinitionSpec, Map<string, DataPointSpec>>();
function dataPointsByName(spec: DefinitionSpec): Map<string, DataPointSpec> {
  let points = byName.get(spec);
  if (!points) {
    points = new Map(spec.dataPoints.map((dp) => [dp.name, dp]));
    byName.set(spec, points);
  }
  return points;
}

/**
 * The threshold set of a data point without device override: one object per definition version
 * (definitions and overrides are cached objects), so what is derived from it below is computed
 * once, not per device and step.
 */
const defaultSets = new WeakMap<DataPointSpec, ThresholdSet>();
function defaultSet(dp: DataPointSpec): ThresholdSet {
  let set = defaultSets.get(dp);
  if (!set) {
    set = { rules: dp.thresholds, hysteresis: dp.hysteresis };
    defaultSets.set(dp, set);
  }
  return set;
}

const ruleMetas = new WeakMap<ThresholdSet, Map<string, SensorMeta>>();
/**
 * What the state step needs of a data point's rules — statuses, descriptions in the locale,
 * fingerprint — memoised per threshold set, so devices sharing a set share one object (the state
 * step sends each distinct object once per call).
 */
function ruleMeta(set: ThresholdSet, dp: DataPointSpec, locale: Locale, suppressed: boolean): SensorMeta {
  let byKey = ruleMetas.get(set);
  if (!byKey) {
    byKey = new Map();
    ruleMetas.set(set, byKey);
  }
  const key = `${locale}\n${dp.dataType}\n${suppressed ? 1 : 0}`;
  let meta = byKey.get(key);
  if (!meta) {
    meta = {
      statuses: set.rules.map((rule) => rule.status),
      descriptions: set.rules.map((rule) => ruleDescription(rule, dp.dataType, locale)),
      rulesId: thresholdFingerprint(set),
      suppressed,
      sensorType: DATA_TYPE_INFO[dp.dataType].sensorType,
    };
    byKey.set(key, meta);
  }
  return meta;
}
