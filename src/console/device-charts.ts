/**
 * A device page's charts (drawn by assets/charts.js): per numeric data point the hourly minimum to
 * maximum and average of the last 24 hours with every value of the last hours; per boolean data
 * point its values of the last 24 hours, drawn as steps. Times are UNIX seconds, as uPlot has them.
 */
import { DATA_TYPE_INFO } from '../domain/data-types.ts';
import type { Bucket } from '../history/last-24-hours.ts';
import type { Last24HoursReader } from '../history/last-24-hours-reader.ts';
import type { InfluxClient } from '../history/influx-client.ts';
import { queryRecentValues, type ValueSeries } from '../history/recent-values.ts';
import type { Redis } from '../redis/connect.ts';
import { currentHourOf, planStateRead, queueStateRead, stateFromQueued } from '../state/read-state.ts';
import type { StateKeys } from '../state/state-keys.ts';
import { pipelineValues } from '../tenancy/records.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { ChartKind, DevicePoint, DeviceView } from './device-data.ts';

/** One data point's chart. */
export interface PointChart {
  sensorName: string;
  label: string;
  units: string;
  /** `band`: hourly band and average with recent values as dots; `steps`: every value as a step. */
  kind: ChartKind;
  /**
   * Min, avg and max of each hour (none for steps), placed at the hour's middle; the current hour's
   * at the middle of its part that has values, so that it sits among them.
   */
  hours: { t: number[]; min: number[]; avg: number[]; max: number[] };
  /** Values of the last RAW_HOURS hours (band) or of the last 24 hours (steps), oldest first. */
  raw: { t: number[]; v: number[] };
}

/** Hours of raw values drawn over the hourly band. */
export const RAW_HOURS = 3;
/** Hours of values a step chart draws. */
const STEP_HOURS = 24;
/** Most raw values drawn per data point. */
const MAX_RAW_VALUES = 2000;
const HOUR_MS = 3_600_000;

export interface ChartDeps {
  influx: InfluxClient;
  last24Hours: Last24HoursReader;
  redis: Redis;
  keys: TenancyKeys & StateKeys;
}

export async function readCharts(
  deps: ChartDeps,
  env: string,
  view: DeviceView,
  nowMs: number,
): Promise<PointChart[]> {
  const bands = view.points.filter((p) => p.chart === 'band');
  const steps = view.points.filter((p) => p.chart === 'steps');
  if (bands.length + steps.length === 0) return [];
  const device = view.device.deviceName;
  const recent = (points: DevicePoint[], hours: number) =>
    queryRecentValues(deps.influx, {
      env,
      device,
      sensors: points.map((p) => p.sensorName),
      sinceMs: nowMs - hours * HOUR_MS,
      maxPerSensor: MAX_RAW_VALUES,
    });
  const [buckets, raw, stepValues] = await Promise.all([
    hourlyBuckets(deps, env, device, bands, nowMs),
    recent(bands, RAW_HOURS),
    recent(steps, STEP_HOURS),
  ]);
  const chartOf = (
    p: DevicePoint,
    kind: ChartKind,
    values: ValueSeries | undefined,
    hours: readonly Bucket[],
  ) => {
    const series = rawOf(values);
    return {
      sensorName: p.sensorName,
      label: p.displayName,
      units: DATA_TYPE_INFO[p.dataType].units.trim(),
      kind,
      hours: hoursOf(hours, series.t, nowMs),
      raw: series,
    };
  };
  return view.points.flatMap((p): PointChart[] => {
    if (p.chart === 'band')
      return [chartOf(p, 'band', raw.get(p.sensorName), buckets.get(`${device}|${p.sensorName}`) ?? [])];
    if (p.chart === 'steps') return [chartOf(p, 'steps', stepValues.get(p.sensorName), [])];
    return [];
  });
}

/** The hourly buckets of the last 24 hours, the current hour from state where it is kept (as the read API's last24Hours does). */
async function hourlyBuckets(
  deps: ChartDeps,
  env: string,
  device: string,
  points: DevicePoint[],
  nowMs: number,
): Promise<Map<string, Bucket[]>> {
  if (points.length === 0) return new Map();
  const plan = planStateRead(points.map((p) => p.sensorName));
  const pipe = deps.redis.pipeline();
  queueStateRead(pipe, deps.keys, env, device, plan);
  const replies = pipelineValues<unknown>(await pipe.exec());
  let at = 0;
  const state = stateFromQueued(plan, () => replies[at++]);
  const items = points.map((p) => {
    const current = currentHourOf(state, p.sensorName, nowMs);
    return current === undefined
      ? { device, sensor: p.sensorName }
      : { device, sensor: p.sensorName, current };
  });
  return deps.last24Hours(env, items, nowMs);
}

function hoursOf(
  buckets: readonly Bucket[],
  rawTimes: readonly number[],
  nowMs: number,
): PointChart['hours'] {
  const out: PointChart['hours'] = { t: [], min: [], avg: [], max: [] };
  const nowS = nowMs / 1000;
  for (const b of buckets) {
    const endS = b.sUTC + 3600;
    // An hour at the middle of what it holds: from its first value the chart has (the hour's start
    // when its values are older than the raw ones) to its end, or to now for the current one — so
    // that an hour a device's first values began in does not reach back before them.
    const inHour = rawTimes.filter((t) => t >= b.sUTC && t < endS);
    const firstS = inHour[0] ?? b.sUTC;
    const lastS = endS <= nowS ? (inHour.length > 0 ? (inHour.at(-1) ?? endS) : endS) : Math.max(firstS, nowS);
    out.t.push((firstS + lastS) / 2);
    out.min.push(b.min);
    out.avg.push(b.avg);
    out.max.push(b.max);
  }
  return out;
}

function rawOf(series: ValueSeries | undefined): PointChart['raw'] {
  return { t: (series?.timesMs ?? []).map((ms) => ms / 1000), v: series?.values ?? [] };
}
