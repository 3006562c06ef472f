/**
 * Endpoints 3–6: data points of one device (list, details) and of many (batchList, batchDetails).
 * Answered from Redis (device records, definitions, state hashes — pipelined for batches) plus the
 * last24Hours reader (closed hours cached, the current hour queried; see last-24-hours-reader.ts).
 * Data points come in definition order; batch results in request order with duplicates removed.
 */
import type { DataPointSpec, Locale } from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import { itemKey } from '../history/last-24-hours.ts';
import { createLast24HoursReader } from '../history/last-24-hours-reader.ts';
import { readDeviceStates, type DeviceStateHash } from '../state/read-state.ts';
import type { DefinitionRecord, DeviceRecord } from '../tenancy/types.ts';
import { uniqueBy, type ApiDeps, type ApiRoute } from './api-route.ts';
import { deviceNotFound } from './devices-routes.ts';
import { readArray, readString, sensorRefItem, stringItem, type Attributes } from './request-params.ts';
import { listedSensor, sensorDetails, sensorUtc } from './sensor-shapes.ts';

/** Most items in one batch request. */
export const MAX_BATCH_ITEMS = 1000;

/** A device with everything needed to shape its data points. */
interface LoadedDevice {
  device: DeviceRecord;
  dataPoints: DataPointSpec[];
  state: DeviceStateHash;
}

export function sensorRoutes(deps: ApiDeps): ApiRoute[] {
  const { redis, keys, tenancy, influx } = deps;
  const last24Hours = deps.last24Hours ?? createLast24HoursReader({ influx });

  async function localeOf(env: string): Promise<Locale> {
    return (await tenancy.getEnvironment(env))?.locale ?? 'en';
  }

  /** Devices in the order given; DEVICE_NOT_FOUND names the first unknown one. */
  async function loadDevices(env: string, names: string[]): Promise<LoadedDevice[]> {
    const records = await tenancy.getDevices(env, names);
    const devices = records.map((d, i) => {
      if (!d) throw deviceNotFound(names[i] ?? '');
      return d;
    });
    const defKey = (d: DeviceRecord) => `${d.definitionIsPublic ? 'public' : 'private'}/${d.definitionName}`;
    const wanted = uniqueBy(devices, defKey);
    const [definitions, states] = await Promise.all([
      Promise.all(wanted.map((d) => tenancy.getDefinition(env, d.definitionName, d.definitionIsPublic))),
      readDeviceStates(redis, keys, env, names),
    ]);
    const byKey = new Map<string, DefinitionRecord | null>(
      wanted.map((d, i) => [defKey(d), definitions[i] ?? null]),
    );
    return devices.map((device, i) => ({
      device,
      dataPoints: byKey.get(defKey(device))?.spec.dataPoints ?? [],
      state: states[i] ?? { fields: {}, suppressed: {} },
    }));
  }

  function findDataPoint(loaded: LoadedDevice, sensorName: string): DataPointSpec {
    const dp = loaded.dataPoints.find((p) => p.name === sensorName);
    if (!dp) {
      throw new AppError(
        'SENSOR_NOT_FOUND',
        `No data point ${sensorName} on device ${loaded.device.deviceName}.`,
        {
          details: { deviceName: loaded.device.deviceName, sensorName },
        },
      );
    }
    return dp;
  }

  return [
    {
      paths: ['/sensors/list'],
      methods: ['GET', 'POST'],
      auth: true,
      async handle({ env, attrs, nowMs }) {
        const deviceName = readString(attrs, 'deviceName');
        const [[loaded], locale] = await Promise.all([loadDevices(env, [deviceName]), localeOf(env)]);
        if (!loaded) throw deviceNotFound(deviceName);
        return loaded.dataPoints.map((dp) => listedSensor(dp, { state: loaded.state, locale, nowMs }));
      },
    },
    {
      paths: ['/sensors/details'],
      methods: ['GET', 'POST'],
      auth: true,
      async handle({ env, attrs, nowMs }) {
        const deviceName = readString(attrs, 'deviceName');
        const sensorName = readString(attrs, 'sensorName');
        const [[loaded], locale] = await Promise.all([loadDevices(env, [deviceName]), localeOf(env)]);
        if (!loaded) throw deviceNotFound(deviceName);
        const dp = findDataPoint(loaded, sensorName);
        const item = { device: deviceName, sensor: sensorName };
        const buckets = await last24Hours(env, [item], nowMs);
        return sensorDetails(dp, { state: loaded.state, locale, nowMs }, buckets.get(itemKey(item)) ?? []);
      },
    },
    {
      paths: ['/sensors/batchList'],
      methods: ['GET', 'POST'],
      auth: true,
      async handle({ env, attrs, nowMs }) {
        const names = uniqueBy(batch(attrs, 'devices', 'an array of device names', stringItem), (n) => n);
        const [loaded, locale] = await Promise.all([loadDevices(env, names), localeOf(env)]);
        return loaded.map((l) => ({
          deviceName: l.device.deviceName,
          sensors: l.dataPoints.map((dp) => sensorUtc(dp, { state: l.state, locale, nowMs })),
        }));
      },
    },
    {
      paths: ['/sensors/batchDetails'],
      methods: ['GET', 'POST'],
      auth: true,
      async handle({ env, attrs, nowMs }) {
        const refs = uniqueBy(
          batch(attrs, 'sensors', 'an array of {deviceName, sensorName} objects', sensorRefItem),
          (r) => `${r.deviceName}|${r.sensorName}`,
        );
        const groups = groupByDevice(refs);
        const [loaded, locale] = await Promise.all([loadDevices(env, [...groups.keys()]), localeOf(env)]);
        const wanted = loaded.map((l) => ({
          l,
          dataPoints: (groups.get(l.device.deviceName) ?? []).map((s) => findDataPoint(l, s)),
        }));
        const items = refs.map((r) => ({ device: r.deviceName, sensor: r.sensorName }));
        const buckets = await last24Hours(env, items, nowMs);
        return wanted.map(({ l, dataPoints }) => ({
          deviceName: l.device.deviceName,
          sensors: dataPoints.map((dp) =>
            sensorDetails(
              dp,
              { state: l.state, locale, nowMs },
              buckets.get(itemKey({ device: l.device.deviceName, sensor: dp.name })) ?? [],
            ),
          ),
        }));
      },
    },
  ];
}

/** A batch attribute: present, well-formed and at most MAX_BATCH_ITEMS long. */
function batch<T>(
  attrs: Attributes,
  name: string,
  expected: string,
  item: (v: unknown) => T | undefined,
): T[] {
  const items = readArray(attrs, name, expected, item);
  if (items.length > MAX_BATCH_ITEMS)
    throw new AppError(
      'BATCH_TOO_LARGE',
      `At most ${MAX_BATCH_ITEMS} items per request (${items.length} sent).`,
      {
        details: { attribute: name, maxItems: MAX_BATCH_ITEMS },
      },
    );
  return items;
}

/** Sensor names per device, devices in order of first appearance. */
function groupByDevice(refs: { deviceName: string; sensorName: string }[]): Map<string, string[]> {
  const groups = new Map<string, string[]>();
  for (const r of refs) {
    const list = groups.get(r.deviceName) ?? [];
    list.push(r.sensorName);
    groups.set(r.deviceName, list);
  }
  return groups;
}
