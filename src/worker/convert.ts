/**
 * Step 4: convert each returned value to its data point's type, format it, and precompute its
 * threshold outcome for every possible previous rule, grouped per device for the state step. Each
 * value becomes one object that serves both the state step and its history line.
 *
 * Everything looked up by a data point's name is in a Map: names such as `constructor` or
 * `__proto__` are valid, and would find Object.prototype's members in a plain object. A device whose
 * conversion throws all the same is left out of the step and reported (`failed`); the others go on.
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
import { parseSourcePath, valueAtPath, type SourcePath } from '../domain/data-point-paths.ts';
import { hasTimers, staleEventText } from '../domain/alarm-conditions.ts';
import { ruleEventText } from '../domain/rule-text.ts';
import { possibleMatches, possibleRules, thresholdFingerprint } from '../domain/thresholds.ts';

const NO_OUTCOMES: readonly number[] = Object.freeze([]);
import type {
  DataPointSpec,
  DataValue,
  DefinitionSpec,
  Locale,
  Status,
  ThresholdSet,
} from '../domain/types.ts';
import { valueFieldText, valueLinePrefix } from '../history/history-writer.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import type { DeviceReadings, SensorMeta, StateValue } from '../state/state-store.ts';
import type { DeviceSettings } from '../tenancy/tenancy-store.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import type { Catalog } from '../tenancy/catalog.ts';
import type { ParsedReading } from './readings.ts';

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
  /** The reading the value comes from (the recent payloads keep each one's statuses). */
  reading: ParsedReading;
}

/** A device's readings for the state step, with its values' history parts. */
export interface ConvertedDevice extends DeviceReadings {
  values: ConvertedValue[];
  /** The readings the values come from (their payloads fail if the state step refuses the device). */
  readings: ParsedReading[];
}

/** What conversion tells of each reading: the ingestion log's part of it. */
export interface ConversionReport {
  /** `values` values of the reading's payload were kept. */
  accepted(item: IngestItem, values: number): void;
  /** The value of data point `key` does not convert to its type: dropped. */
  dropped(r: ParsedReading, key: string, reason: string): void;
  /** Keys of the reading's result that are not data points of its definition: ignored. */
  unknownKeys(r: ParsedReading, keys: string[]): void;
}

/** Where a device's readings are converted, and what is known of it there. */
export interface DeviceConversion {
  env: string;
  locale: Locale;
  /** Its threshold overrides and suppressions (none when absent). */
  settings: DeviceSettings | undefined;
  defaultAvailabilityMinutes: number;
  nowMs: number;
}

export async function convertReadings(
  parsed: ParsedReading[],
  deps: {
    catalog: Catalog;
    report: ConversionReport;
    defaultAvailabilityMinutes: number;
    nowMs: number;
    /** A device whose conversion threw, with its readings: it is left out of the step. */
    failed: (readings: ParsedReading[], err: unknown) => void;
  },
): Promise<ConvertedDevice[]> {
  const { catalog, nowMs } = deps;
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
    const env = group[0]!.item.env;
    try {
      const where: DeviceConversion = {
        env,
        locale: environmentOf.get(env)?.locale ?? 'en',
        settings: settingsOf.get(env)?.get(device.deviceName),
        defaultAvailabilityMinutes: deps.defaultAvailabilityMinutes,
        nowMs,
      };
      devices.push(convertDevice(device, group, where, deps.report));
    } catch (err) {
      deps.failed(group, err);
    }
  }
  return devices;
}

/**
 * Converts the readings of one device (all of one definition, in queue order) for the state step:
 * the worker's conversion, which `vigil definition test` runs too. Throws only on a fault in the
 * data it cannot handle (a definition of a later version, say); the caller fails that device.
 */
export function convertDevice(
  device: DeviceRecord,
  readings: ParsedReading[],
  where: DeviceConversion,
  report: ConversionReport,
): ConvertedDevice {
  const definition = readings[0]!.definition;
  const context: DeviceContext = {
    env: where.env,
    device: device.deviceName,
    locale: where.locale,
    points: dataPointsByName(definition.spec),
    overrides: where.settings?.overrides,
    suppressed: where.settings?.suppressed,
    nowMs: where.nowMs,
    sensors: new Map(),
    parts: new Map(),
  };
  const values: ConvertedValue[] = [];
  let contactMs = 0;
  for (const r of readings) {
    if (r.item.receivedMs > contactMs) contactMs = r.item.receivedMs;
    convertReading(r, context, values, report);
  }
  if (!isSorted(values)) values.sort((a, b) => a.timeMs - b.timeMs || a.offsetNs - b.offsetNs);
  const minutes =
    device.availabilityMinutes ??
    definition.spec.availability?.timeoutMinutes ??
    where.defaultAvailabilityMinutes;
  const { displayName } = device;
  return {
    env: where.env,
    device: device.deviceName,
    // Half a surrogate pair has no UTF-8 form, and the state script's JSON decoder refuses it.
    displayName: displayName.isWellFormed() ? displayName : displayName.toWellFormed(),
    contactMs,
    timeoutMs: Math.round(minutes * 60_000),
    sensors: context.sensors,
    values,
    ...(context.sensors.size === context.points.size ? { allPoints: true } : {}),
    readings,
  };
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

/** Converts the values of one reading into `values`; problems go to `report`. */
function convertReading(
  r: ParsedReading,
  ctx: DeviceContext,
  values: ConvertedValue[],
  report: ConversionReport,
): void {
  const seed = fingerprintSeed(payloadFingerprint(readingIdentity(r)));
  let position = 0;
  let accepted = 0;
  let unknown: string[] | undefined;
  const returned = r.values;
  const add = (dp: DataPointSpec, key: string, input: unknown): void => {
    let value: DataValue | undefined =
      typeof input === 'number' ? acceptedNumber(dp.dataType, input) : undefined;
    if (value === undefined) {
      const converted = convertValue(dp.dataType, input);
      if (converted === null) return;
      if (!converted.ok) {
        report.dropped(r, key, converted.reason);
        return;
      }
      value = converted.value;
    }
    values.push(convertedValue(ctx, dp, key, value, r, offsetFromSeed(seed, position)));
    accepted += 1;
  };
  const sourced = sourcedPoints(r.definition.spec);
  // The parser's result is a plain object fresh from JSON: for…in sees its own keys, in
  // Object.keys order (the position below must stay that order: it fixes each history point).
  // JSON.parse makes a key `__proto__` an own property, which returned[key] reads like any other.
  for (const key in returned) {
    position += 1;
    const dp = ctx.points.get(key);
    if (dp && !dp.source && !dp.radio) add(dp, key, returned[key]);
    else if (!sourced?.roots.has(key)) (unknown ??= []).push(key);
  }
  if (sourced) {
    for (const dp of sourced.points) {
      position += 1;
      add(dp, dp.name, pointInput(dp, returned, r.network));
    }
  }
  if (unknown) report.unknownKeys(r, unknown);
  report.accepted(r.item, accepted);
}

/**
 * What identifies a reading's values in history: a network server's frame by its device, frame
 * counter and receive time (a webhook delivered again, in an envelope that may differ, lands on the
 * same points); any other reading by its device and payload text.
 */
function readingIdentity(r: ParsedReading): string {
  const n = r.network;
  if (!n) return `${r.deviceName}\n${r.payloadStr}`;
  return `${r.deviceName}\n${n.kind}\n${n.radio.frameCounter ?? ''}\n${n.recvTime}`;
}

/**
 * What a data point takes from a parser's result (or, for `radio`, from the message's metadata):
 * undefined when there is nothing for it.
 */
export function pointInput(
  dp: DataPointSpec,
  returned: Record<string, unknown>,
  network: ParsedReading['network'],
): unknown {
  if (dp.radio) return network?.radio[dp.radio];
  if (dp.source) {
    const path = pathOf(dp);
    return path ? valueAtPath(returned, path) : undefined;
  }
  return Object.hasOwn(returned, dp.name) ? returned[dp.name] : undefined;
}

const paths = new WeakMap<DataPointSpec, SourcePath | null>();
/**
 * The steps of a data point's `source`, parsed once per definition version; null for a path that
 * does not parse (the definition's check refuses those: it finds nothing).
 */
function pathOf(dp: DataPointSpec): SourcePath | null {
  let path = paths.get(dp);
  if (path === undefined) {
    const parsed = dp.source === undefined ? null : parseSourcePath(dp.source);
    path = parsed === null || 'problem' in parsed ? null : parsed;
    paths.set(dp, path);
  }
  return path;
}

/** The data points of a definition that take their value from a path or from radio metadata. */
interface SourcedPoints {
  points: DataPointSpec[];
  /** The top-level keys their paths start with: consumed, so never unknown data points. */
  roots: Set<string>;
}

const sourcedOf = new WeakMap<DefinitionSpec, SourcedPoints | null>();
function sourcedPoints(spec: DefinitionSpec): SourcedPoints | null {
  let found = sourcedOf.get(spec);
  if (found === undefined) {
    const points: DataPointSpec[] = [];
    const roots = new Set<string>();
    for (const dp of spec.dataPoints) {
      if (!dp.radio && !dp.source) continue;
      points.push(dp);
      const path = pathOf(dp);
      if (path) roots.add(path[0]!);
    }
    found = points.length > 0 ? { points, roots } : null;
    sourcedOf.set(spec, found);
  }
  return found;
}

function convertedValue(
  ctx: DeviceContext,
  dp: DataPointSpec,
  sensor: string,
  value: DataValue,
  reading: ParsedReading,
  offsetNs: number,
): ConvertedValue {
  const { timeMs } = reading;
  let parts = ctx.parts.get(sensor);
  if (!parts) {
    const { set, meta } = pointRules(dp, ctx);
    parts = { set, meta, linePrefix: valueLinePrefix(ctx.env, ctx.device, sensor, meta.sensorType) };
    ctx.parts.set(sensor, parts);
    ctx.sensors.set(sensor, meta);
  }
  const { set, meta, linePrefix } = parts;
  // Rules that wait need the rules met (possibleMatches), the others only the rule entered.
  const matches = meta.forMs ? possibleMatches(value, set) : undefined;
  const outcomes = matches ? NO_OUTCOMES : possibleRules(value, set);
  // The status without context: what applies at once (a waiting rule has not waited yet).
  const rule = matches ? firstAtOnce(matches[0]!, meta.forMs!) : outcomes[0]!;
  const status: Status = rule >= 0 ? (meta.statuses[rule] ?? 'SUCCESS') : 'SUCCESS';
  const receivedMs = reading.item.receivedMs;
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
      // Always present (undefined without rules that wait): one object shape for every value.
      matches,
      receivedMs,
      number: dp.dataType === 'string' ? null : value,
      linePrefix,
      fieldText: `value=${text}`,
      status,
      reading,
    };
  }
  return {
    sensor,
    timeMs,
    offsetNs,
    valueJson: JSON.stringify(value),
    currentValue: formatValue(dp.dataType, value, ctx.locale),
    outcomes,
    matches,
    receivedMs,
    number: numericValue(dp.dataType, value),
    linePrefix,
    fieldText: valueFieldText(value),
    status,
    reading,
  };
}

/** The rules in force for a data point of the device (its override, else the definition's) and their metadata. */
function pointRules(
  dp: DataPointSpec,
  ctx: Pick<DeviceContext, 'overrides' | 'suppressed' | 'locale' | 'nowMs'>,
): { set: ThresholdSet; meta: SensorMeta } {
  const set = ctx.overrides?.get(dp.name) ?? defaultSet(dp);
  const until = ctx.suppressed?.get(dp.name);
  return {
    set,
    meta: ruleMeta(set, dp, ctx.locale, until !== undefined && (until === 0 || until > ctx.nowMs)),
  };
}

/**
 * The rule metadata of every data point of a device whose rules keep timers (a rule that waits, or a
 * stale rule): what a tick of the device's timer hands the state step.
 */
export function timerPoints(
  spec: DefinitionSpec,
  where: Pick<DeviceConversion, 'locale' | 'settings' | 'nowMs'>,
): Map<string, SensorMeta> {
  const ctx = {
    overrides: where.settings?.overrides,
    suppressed: where.settings?.suppressed,
    locale: where.locale,
    nowMs: where.nowMs,
  };
  const out = new Map<string, SensorMeta>();
  for (const dp of spec.dataPoints) {
    const { set, meta } = pointRules(dp, ctx);
    if (hasTimers(set)) out.set(dp.name, meta);
  }
  return out;
}

/** The first of the rules met (preference order) that applies at once; -1 when each waits. */
function firstAtOnce(matched: readonly number[], forMs: readonly number[]): number {
  for (const r of matched) if (!forMs[r]) return r;
  return -1;
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
    if (dp.stale) set.stale = dp.stale;
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
      descriptions: set.rules.map((rule) => ruleEventText(rule, dp.dataType, locale)),
      rulesId: thresholdFingerprint(set),
      suppressed,
      sensorType: DATA_TYPE_INFO[dp.dataType].sensorType,
    };
    if (set.rules.some((rule) => rule.forMs)) meta.forMs = set.rules.map((rule) => rule.forMs ?? 0);
    if (set.stale) meta.stale = { ...set.stale, text: staleEventText(set.stale) };
    byKey.set(key, meta);
  }
  return meta;
}
