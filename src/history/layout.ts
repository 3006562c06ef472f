/**
 * Vigil's InfluxDB layout: retention policies, measurements, tags and fields. Every reader and writer
 * of history (writer, buckets, export, Grafana dashboards, the rollup continuous query) names them
 * from here; docs/history.md describes the same table for operators.
 */
import type { Status } from '../domain/types.ts';
import { STATUSES } from '../domain/types.ts';

/** Retention policy of raw values and contacts (DEFAULT policy, duration VIGIL_RAW_RETENTION). */
export const RAW_RP = 'raw';
/** Retention policy of hourly rollups and events (duration VIGIL_ROLLUP_RETENTION). */
export const LONG_RP = 'long';

/**
 * One point per data point value (not one point per payload): tags env, device, sensor, sensorType;
 * fields value (float), text (string), lat/lon (float), severity (integer 0–4: the status, see
 * severityOf). Points of earlier versions also have a status string field, no longer written:
 * it said nothing severity does not and took a quarter of InfluxDB's CPU per line.
 */
export const READINGS = 'readings';
/** Hourly rollups of READINGS written by the continuous query: count, total, max, min, avg. */
export const READINGS_HOURLY = 'readings_hourly';
/** Events: tags env, device, category, status; fields id, displayName, sensor, sensorType, value|text|lat/lon, message. */
export const EVENTS = 'events';
/** One point per accepted payload: tags env, device; field seen = 1 (float). */
export const CONTACTS = 'contacts';

/** Name prefix of the rollup continuous query; the suffix is a hash of its text. */
export const ROLLUP_CQ_PREFIX = 'vigil_rollup_hourly_';
/** How far back each run of the rollup query recomputes (covers late and current-hour values). */
export const ROLLUP_CQ_FOR = '2h';

/** Numeric severity of a status (SUCCESS 0 … CRITICAL 4), so InfluxQL can take max() of it. */
export function severityOf(status: Status): number {
  return STATUSES.indexOf(status);
}
