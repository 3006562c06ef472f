/**
 * Every event is a point of its own in InfluxDB: the events one step creates for one device share
 * their millisecond, device, category and status, so only their sub-millisecond offsets keep them
 * apart, in that step and in the next step of the same millisecond.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { connectRedis, closeRedis } from '../../src/redis/connect.ts';
import { createKeys } from '../../src/keys.ts';
import { createStateStore, type DeviceReadings } from '../../src/state/state-store.ts';
import { createInfluxClient } from '../../src/history/influx-client.ts';
import { createHistoryWriter } from '../../src/history/history-writer.ts';
import { ensureHistorySchema } from '../../src/history/schema.ts';
import { createLogger } from '../../src/log/logger.ts';
import type { EventRecord } from '../../src/domain/types.ts';
import { testConfig } from '../support/context.ts';

const POINTS = 400;

/** One device of POINTS data points, each WARNING above 25 and CRITICAL above 30, all at `v`. */
function readings(v: number, timeMs: number): DeviceReadings {
  const meta = {
    statuses: ['WARNING', 'CRITICAL'] as const,
    descriptions: ['Warm', 'Hot'],
    rulesId: 'r1',
    suppressed: false,
    sensorType: 'tempC',
  };
  const outcomes = v > 30 ? [1, 1, 1] : v > 25 ? [0, 0, 0] : [-1, -1, -1];
  return {
    env: 'e1',
    device: 'd1',
    displayName: 'Device one',
    contactMs: timeMs,
    timeoutMs: 0,
    sensors: new Map(Array.from({ length: POINTS }, (_, i) => [`P${i}`, { ...meta, statuses: [...meta.statuses] }])),
    values: Array.from({ length: POINTS }, (_, i) => ({
      sensor: `P${i}`,
      timeMs,
      offsetNs: 0,
      valueJson: JSON.stringify(v),
      currentValue: `${v.toFixed(1)} °C`,
      outcomes,
      receivedMs: timeMs,
      number: v,
    })),
  };
}

describe('event points', () => {
  it('stores every event of a step, and of the next step in the same millisecond, as its own point', async () => {
    const config = testConfig();
    const redis = connectRedis(config.redisUrl, 'command');
    onTestFinished(() => closeRedis(redis));
    const keys = createKeys(config.keyPrefix);
    const state = createStateStore({ redis, keys, eventsCap: 10_000 });
    const nowMs = Date.UTC(2026, 11, 1, 9, 0, 0, 500);
    // Two steps at the same millisecond, to WARNING then back to SUCCESS and to WARNING again: the
    // second step's events have the same device, category and status as the first's.
    await state.applyReadings([readings(26, nowMs - 30)], nowMs);
    await state.applyReadings([readings(20, nowMs - 20)], nowMs);
    await state.applyReadings([readings(27, nowMs - 10)], nowMs);
    const entries = await redis.xrange(keys.eventOutbox(), '-', '+');
    const events = entries.map(([, fields]) => JSON.parse(fields[1]!) as EventRecord);
    expect(events).toHaveLength(3 * POINTS);
    expect(new Set(events.map((e) => e.receivedMs))).toEqual(new Set([nowMs]));

    const influx = createInfluxClient({ url: config.influxUrl, database: config.influxDatabase });
    await ensureHistorySchema(influx, { rawRetention: 'INF', rollupRetention: 'INF', resampleEvery: '1m' });
    const writer = createHistoryWriter({ influx, log: createLogger('silent') });
    await writer.write({ values: [], events, contacts: [] });
    const [series] = await influx.query('SELECT count("message") FROM "long"."events"');
    expect(series?.[0]?.values[0]?.[1]).toBe(3 * POINTS);
  });
});
