/**
 * Step 4: convert each returned value to its data point's type, format it, and precompute its
 * threshold outcome for every possible previous rule, grouped per device for the state step.
 */
import { DATA_TYPE_INFO, convertValue, formatValue, numericValue } from '../domain/data-types.ts';
import { payloadFingerprint, valueOffsetNs } from '../domain/history-offset.ts';
import { possibleOutcomes, ruleDescription, thresholdFingerprint } from '../domain/thresholds.ts';
import type { DataPointSpec, DefinitionSpec, Locale, Status, ThresholdSet } from '../domain/types.ts';
import type { ValuePoint } from '../history/history-writer.ts';
import type { DeviceReadings, SensorMeta, StateValue } from '../state/state-store.ts';
import type { Catalog } from './catalog.ts';
import type { OutcomeLog } from './outcomes.ts';
import type { ParsedReading } from './parse.ts';

/**
 * A converted value on its way to history. `status` starts as the status without hysteresis
 * context, which stays when the state step does not apply the value (older than the stored one);
 * otherwise the state step's status replaces it (ingest-processor's settleStatuses).
 */
export type PendingValue = ValuePoint;

export interface Converted {
  devices: DeviceReadings[];
  /** Same order as the flattened `devices[i].values`. */
  pending: PendingValue[][];
}

export async function convertReadings(
  parsed: ParsedReading[],
  deps: { catalog: Catalog; outcomes: OutcomeLog; defaultAvailabilityMinutes: number; nowMs: number },
): Promise<Converted> {
  const { catalog, outcomes, nowMs } = deps;
  const byDevice = new Map<string, ParsedReading[]>();
  for (const p of parsed) {
    const key = `${p.item.env}\n${p.deviceName}`;
    const list = byDevice.get(key) ?? [];
    list.push(p);
    byDevice.set(key, list);
  }
  const namesByEnv = new Map<string, string[]>();
  for (const group of byDevice.values()) {
    const first = group[0]!;
    const names = namesByEnv.get(first.item.env) ?? [];
    names.push(first.device.deviceName);
    namesByEnv.set(first.item.env, names);
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
  const devices: DeviceReadings[] = [];
  const pending: PendingValue[][] = [];
  for (const group of byDevice.values()) {
    const first = group[0]!;
    const env = first.item.env;
    const { device, definition } = first;
    const environment = environmentOf.get(env);
    const deviceSettings = settingsOf.get(env)?.get(device.deviceName);
    const overrides = deviceSettings?.overrides ?? {};
    const suppressed = deviceSettings?.suppressed ?? {};
    const locale: Locale = environment?.locale ?? 'en';
    const points = dataPointsByName(definition.spec);
    const sensors: Record<string, SensorMeta> = {};
    const sets = new Map<string, ThresholdSet>();
    const values: { v: StateValue; p: PendingValue }[] = [];
    for (const r of group) {
      const fingerprint = payloadFingerprint(`${r.deviceName}\n${r.payloadStr}`);
      let position = 0;
      let accepted = 0;
      const unknown: string[] = [];
      for (const [key, input] of Object.entries(r.values)) {
        position += 1;
        const dp = points.get(key);
        if (!dp) {
          unknown.push(key);
          continue;
        }
        const converted = convertValue(dp.dataType, input);
        if (converted === null) continue;
        if (!converted.ok) {
          outcomes.problem(r.item, 'VALUE_CONVERSION_FAILED', `${key}: ${converted.reason}`, r.deviceName);
          continue;
        }
        let set = sets.get(key);
        let meta = sensors[key];
        if (!set || !meta) {
          set = overrides[key] ?? defaultSet(dp);
          sets.set(key, set);
          const until = suppressed[key];
          meta = ruleMeta(set, dp, locale, until !== undefined && (until === 0 || until > nowMs));
          sensors[key] = meta;
        }
        const outs = possibleOutcomes(converted.value, set).map((o) => o.ruleIndex);
        const offsetNs = valueOffsetNs(fingerprint, position);
        values.push({
          v: {
            sensor: key,
            timeMs: r.timeMs,
            offsetNs,
            valueJson: JSON.stringify(converted.value),
            currentValue: formatValue(dp.dataType, converted.value, locale),
            outcomes: outs,
            number: numericValue(dp.dataType, converted.value),
          },
          p: {
            env,
            device: device.deviceName,
            sensor: key,
            sensorType: meta.sensorType,
            dataType: dp.dataType,
            timeMs: r.timeMs,
            offsetNs,
            value: converted.value,
            status: freshStatus(outs[0] ?? -1, meta.statuses),
          },
        });
        accepted += 1;
      }
      if (unknown.length > 0) {
        outcomes.problem(
          r.item,
          'UNKNOWN_DATA_POINT',
          `not data points of ${definition.spec.name}: ${unknown.slice(0, 10).join(', ')}`,
          r.deviceName,
        );
      }
      outcomes.accepted(r.item, accepted);
    }
    values.sort((a, b) => a.v.timeMs - b.v.timeMs || a.v.offsetNs - b.v.offsetNs);
    const minutes =
      device.availabilityMinutes ??
      definition.spec.availability?.timeoutMinutes ??
      deps.defaultAvailabilityMinutes;
    devices.push({
      env,
      device: device.deviceName,
      displayName: device.displayName,
      contactMs: Math.max(...group.map((r) => r.item.receivedMs)),
      timeoutMs: Math.round(minutes * 60_000),
      sensors,
      values: values.map((x) => x.v),
    });
    pending.push(values.map((x) => x.p));
  }
  return { devices, pending };
}

const freshStatus = (rule: number, statuses: Status[]): Status =>
  rule >= 0 ? (statuses[rule] ?? 'SUCCESS') : 'SUCCESS';

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
