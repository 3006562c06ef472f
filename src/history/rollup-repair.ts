/**
 * Rollup jobs: each recomputes the hourly rollup of one late hour (late-hours.ts) from raw values,
 * as a BullMQ job in the queue `rollups`. Its deduplication id derives from the hour's series and
 * time, so an hour has at most one job waiting, however often it is enqueued; the job rewrites the rollup
 * points with the continuous query's own statement restricted to that series and hour, so they
 * land on the very points the query writes (idempotent). An InfluxDB outage fails the job, and it
 * is retried with a doubling delay; the mark is removed only once the rollup is written, and only
 * if no value marked the hour again meanwhile.
 */
import { UnrecoverableError, type Job } from 'bullmq';
import { sha256Hex } from '../lib/sha256.ts';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { HistoryKeys } from './history-keys.ts';
import { InfluxError, type InfluxClient } from './influx-client.ts';
import { msTime, str } from './influxql.ts';
import { parseLateHourField, type LateHour } from './late-hours.ts';
import { rollupSelect } from './schema.ts';

/** The BullMQ queue of rollup jobs. */
export const ROLLUP_QUEUE = 'rollups';

/** A rollup job: the late hour's field in the late-hours hash. */
export interface RollupJob {
  field: string;
}

/** What a job did: for the log and tests. */
export type RollupOutcome = 'recomputed' | 'already done' | 'marked again' | 'expired' | 'malformed';

const HOUR_MS = 3_600_000;
/** Recomputations of one hour per job while values keep marking it again. */
const MAX_ROUNDS = 3;
/** Rollup points are not written this close to the rollup retention's edge (InfluxDB refuses older). */
const RETENTION_MARGIN_MS = 60_000;

/** The deduplication id of a late hour's jobs (names may hold any character; this is hex). */
export const rollupJobId = (field: string): string => `hour-${sha256Hex(field).slice(0, 40)}`;

/**
 * Rewrites the rollup points of one data point and hour: the continuous query's SELECT … INTO,
 * restricted to the series and hour. No raw value in the hour writes nothing.
 */
export async function recomputeRollup(influx: InfluxClient, hour: LateHour): Promise<void> {
  const where =
    `"env" = ${str(hour.env)} AND "device" = ${str(hour.device)} AND "sensor" = ${str(hour.sensor)} ` +
    `AND time >= ${msTime(hour.hourMs)} AND time < ${msTime(hour.hourMs + HOUR_MS)}`;
  await influx.query(rollupSelect(influx.database, { into: true, where }), { method: 'POST' });
}

/** Removes a mark if it still holds the token read before the recomputation. */
const CLEAR_LUA = `if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then return redis.call('HDEL', KEYS[1], ARGV[1]) end
return 0`;

type ClearingRedis = Redis & {
  vigilClearLateHour(key: string, field: string, token: string): Promise<number>;
};

export interface RollupProcessorDeps {
  redis: Redis;
  keys: HistoryKeys;
  influx: InfluxClient;
  log: Logger;
  /** Rollup retention (VIGIL_ROLLUP_RETENTION) in ms; undefined: forever. */
  rollupRetentionMs?: number | undefined;
  clock?: () => number;
}

export function createRollupProcessor(
  deps: RollupProcessorDeps,
): (job: Job<RollupJob>) => Promise<RollupOutcome> {
  const { keys, influx, log } = deps;
  const clock = deps.clock ?? Date.now;
  const redis = deps.redis as ClearingRedis;
  if (typeof (redis as Partial<ClearingRedis>).vigilClearLateHour !== 'function')
    redis.defineCommand('vigilClearLateHour', { numberOfKeys: 1, lua: CLEAR_LUA });
  const clear = async (field: string, token: string) =>
    (await redis.vigilClearLateHour(keys.lateHours(), field, token)) === 1;
  const isExpired = (hour: LateHour) =>
    deps.rollupRetentionMs !== undefined &&
    hour.hourMs < clock() - deps.rollupRetentionMs + RETENTION_MARGIN_MS;

  async function recompute(field: string, hour: LateHour, token: string): Promise<void> {
    try {
      await recomputeRollup(influx, hour);
    } catch (err) {
      // Unreachable or failing on its side: retried with backoff. Else InfluxDB refused the
      // statement itself, and would every time: the mark goes, with an error in the log.
      if (!(err instanceof InfluxError) || err.outage) throw err;
      await clear(field, token);
      log.error(
        { env: hour.env, device: hour.device, sensor: hour.sensor, hourMs: hour.hourMs, err },
        'InfluxDB refused to recompute an hourly rollup; the hour keeps its rollup as it is',
      );
      throw new UnrecoverableError(err.message);
    }
  }

  return async (job) => {
    const { field } = job.data;
    const hour = parseLateHourField(field);
    if (!hour) {
      await redis.hdel(keys.lateHours(), field);
      return 'malformed';
    }
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const token = await redis.hget(keys.lateHours(), field);
      if (token === null) return 'already done';
      if (isExpired(hour)) {
        await clear(field, token);
        return 'expired';
      }
      await recompute(field, hour, token);
      if (await clear(field, token)) return 'recomputed';
    }
    // Still marked: the sweeper enqueues the hour again once this job is gone.
    return 'marked again';
  };
}
