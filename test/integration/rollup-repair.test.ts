/**
 * One rollup job against real Redis and InfluxDB: it rewrites the rollup of its hour from raw
 * values and removes the hour's mark, keeps the mark (and recomputes again) when a value marked the
 * hour during its run, and drops marks of hours past the rollup retention.
 */
import type { Job } from 'bullmq';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createHistoryWriter, type ValuePoint } from '../../src/history/history-writer.ts';
import type { InfluxClient } from '../../src/history/influx-client.ts';
import { msTime } from '../../src/history/influxql.ts';
import { lateHourField, markLateHours, type LateHour } from '../../src/history/late-hours.ts';
import { createRollupProcessor, type RollupJob } from '../../src/history/rollup-repair.ts';
import { createKeys } from '../../src/keys.ts';
import { createLogger } from '../../src/log/logger.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { testConfig } from '../support/context.ts';
import { freshHistoryDatabase, valuePoint } from '../support/history.ts';

const H = 3_600_000;
const HOUR = Date.UTC(2026, 10, 20, 5);
const hour: LateHour = { env: 'demo', device: 'd1', sensor: 'Temperature', hourMs: HOUR };
const field = lateHourField(hour);
const job = { data: { field } } as Job<RollupJob>;

async function setup(influxOf: (influx: InfluxClient) => InfluxClient = (i) => i, clockMs = HOUR + 5 * H) {
  const config = testConfig();
  const redis = connectRedis(config.redisUrl, 'command', 'test');
  onTestFinished(() => closeRedis(redis));
  const keys = createKeys(config.keyPrefix);
  const influx = await freshHistoryDatabase();
  const writer = createHistoryWriter({ influx, log: createLogger('silent') });
  const write = (...values: Partial<ValuePoint>[]) =>
    writer.write({ values: values.map((v) => valuePoint(v)), events: [], contacts: [] });
  const mark = (token: string) => redis.call(...markLateHours(keys, [field], token));
  const run = createRollupProcessor({
    redis,
    keys,
    influx: influxOf(influx),
    log: createLogger('silent'),
    rollupRetentionMs: 30 * 24 * H,
    clock: () => clockMs,
  });
  const rollup = async () => {
    const [series] = await influx.query(
      `SELECT "count", "total", "min", "max" FROM "long"."readings_hourly" WHERE time >= ${msTime(HOUR)} AND time < ${msTime(HOUR + H)}`,
    );
    return series?.[0]?.values.map((row) => row.slice(1));
  };
  return { redis, keys, write, mark, run, rollup };
}

describe('a rollup job', () => {
  it('rewrites its hour from raw values and removes the mark; run again, it changes nothing', async () => {
    const { redis, keys, write, mark, run, rollup } = await setup();
    await write(
      { timeMs: HOUR + 10, value: 20 },
      { timeMs: HOUR + 20, value: 22 },
      { timeMs: HOUR + H, value: 99 },
    );
    await mark('a');
    expect(await run(job)).toBe('recomputed');
    expect(await rollup()).toEqual([[2, 42, 20, 22]]);
    expect(await redis.hlen(keys.lateHours())).toBe(0);
    expect(await run(job)).toBe('already done');
    await mark('b');
    expect(await run(job)).toBe('recomputed');
    expect(await rollup()).toEqual([[2, 42, 20, 22]]);
  });

  it('recomputes again when a value marks the hour while it runs, and leaves the newer mark alone', async () => {
    let late: (() => Promise<unknown>) | undefined;
    /** InfluxDB as it is, but the first recomputation is followed by a late value and its mark. */
    const racing = (influx: InfluxClient): InfluxClient => ({
      database: influx.database,
      ping: () => influx.ping(),
      write: influx.write.bind(influx),
      query: async (...args) => {
        const answer = await influx.query(...args);
        const next = late;
        late = undefined;
        await next?.();
        return answer;
      },
    });
    const { redis, keys, write, mark, run, rollup } = await setup(racing);
    await write({ timeMs: HOUR + 10, value: 20 });
    await mark('a');
    late = async () => {
      await write({ timeMs: HOUR + 30, value: 24 });
      await mark('b');
    };
    expect(await run(job)).toBe('recomputed');
    expect(await rollup()).toEqual([[2, 44, 20, 24]]);
    expect(await redis.hlen(keys.lateHours())).toBe(0);
  });

  it('drops the mark of an hour past the rollup retention without writing it', async () => {
    const { redis, keys, write, mark, run, rollup } = await setup(undefined, HOUR + 31 * 24 * H);
    await write({ timeMs: HOUR + 10, value: 20 });
    await mark('a');
    expect(await run(job)).toBe('expired');
    expect(await rollup()).toBeUndefined();
    expect(await redis.hlen(keys.lateHours())).toBe(0);
  });
});
