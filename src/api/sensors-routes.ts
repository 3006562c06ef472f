/**
 * Endpoints 3–6: data points of one device (list, details) and of many (batchList, batchDetails).
 * Answered from Redis (device records, definitions, state hashes with each data point's current
 * hour and the device's history version — pipelined for batches) plus the last24Hours reader for
 * the closed hours (cached per history version; see last-24-hours-reader.ts).
 * Data points come in definition order; batch results in request order with duplicates removed.
 */
import { isNumericDataType } from '../domain/data-types.ts';
import type { DataPointSpec } from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import { itemKey } from '../history/last-24-hours.ts';
import { createLast24HoursReader, type ReaderItem } from '../history/last-24-hours-reader.ts';
import { currentHourOf } from '../state/read-state.ts';
import { z } from 'zod';
import { apiRoute, uniqueBy, type ApiDeps, type ApiRoute } from './api-route.ts';
import { attr, attributes } from './attributes.ts';
import { deviceNotFound } from './devices-routes.ts';
import { createSensorReads, type LoadedDevice } from './sensor-reads.ts';
import { listedSensor, sensorDetails, sensorUtc } from './sensor-shapes.ts';

/** Most items in one batch request. */
export const MAX_BATCH_ITEMS = 1000;

const sensorRef = z.object(
  { deviceName: attr.string(), sensorName: attr.string() },
  { error: 'a {deviceName, sensorName} object' },
);

export function sensorRoutes(deps: ApiDeps): ApiRoute[] {
  const { redis, keys, influx } = deps;
  const last24Hours = deps.last24Hours ?? createLast24HoursReader({ influx });
  const loadDevices = createSensorReads({
    redis: deps.reads ?? redis,
    keys,
    hashes: deps.hashes ?? { hgetall: (key) => redis.hgetall(key) },
  });

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
    apiRoute({
      paths: ['/sensors/list'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: attributes({ deviceName: attr.string() }),
      async handle({ env, attrs: { deviceName }, nowMs }) {
        const { locale, devices } = await loadDevices(env, [deviceName]);
        const [loaded] = devices;
        if (!loaded) throw deviceNotFound(deviceName);
        return loaded.dataPoints.map((dp) => listedSensor(dp, { state: loaded.state, locale, nowMs }));
      },
    }),
    apiRoute({
      paths: ['/sensors/details'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: attributes({ deviceName: attr.string(), sensorName: attr.string() }),
      async handle({ env, attrs: { deviceName, sensorName }, nowMs }) {
        const { locale, devices } = await loadDevices(env, [deviceName], () => [sensorName]);
        const [loaded] = devices;
        if (!loaded) throw deviceNotFound(deviceName);
        const dp = findDataPoint(loaded, sensorName);
        const item = historyItem(loaded, dp, nowMs);
        const buckets = await last24Hours(env, [item], nowMs);
        return sensorDetails(dp, { state: loaded.state, locale, nowMs }, buckets.get(itemKey(item)) ?? []);
      },
    }),
    apiRoute({
      paths: ['/sensors/batchList'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: attributes({
        devices: attr.list(attr.string(), { max: MAX_BATCH_ITEMS }).describe('Device names.'),
      }),
      async handle({ env, attrs, nowMs }) {
        const names = uniqueBy(attrs.devices, (n) => n);
        const { locale, devices } = await loadDevices(env, names);
        return devices.map((l) => ({
          deviceName: l.device.deviceName,
          sensors: l.dataPoints.map((dp) => sensorUtc(dp, { state: l.state, locale, nowMs })),
        }));
      },
    }),
    apiRoute({
      paths: ['/sensors/batchDetails'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: attributes({
        sensors: attr.list(sensorRef, { max: MAX_BATCH_ITEMS }).describe('Data points, by device and name.'),
      }),
      async handle({ env, attrs, nowMs }) {
        const refs = uniqueBy(attrs.sensors, (r) => `${r.deviceName}|${r.sensorName}`);
        const groups = groupByDevice(refs);
        const { locale, devices } = await loadDevices(env, [...groups.keys()], (d) => groups.get(d) ?? []);
        const wanted = devices.map((l) => ({
          l,
          dataPoints: (groups.get(l.device.deviceName) ?? []).map((s) => findDataPoint(l, s)),
        }));
        const items = wanted.flatMap(({ l, dataPoints }) =>
          dataPoints.map((dp) => historyItem(l, dp, nowMs)),
        );
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
    }),
  ];
}

/**
 * A data point's last24Hours item, with its current hour from state (none for text and GPS data
 * points: they have no numeric history) and the device's history version, which keys the cached
 * closed hours.
 */
function historyItem(loaded: LoadedDevice, dp: DataPointSpec, nowMs: number): ReaderItem {
  const { state } = loaded;
  const numeric = isNumericDataType(dp.dataType) || dp.dataType === 'boolean';
  return {
    device: loaded.device.deviceName,
    sensor: dp.name,
    current: numeric ? currentHourOf(state, dp.name, nowMs) : null,
    version: state.historyVersion,
  };
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
