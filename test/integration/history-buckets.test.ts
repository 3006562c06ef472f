import { describe, expect, it } from 'vitest';
import { createHistoryWriter, type ValuePoint } from '../../src/history/history-writer.ts';
import { queryLast24Hours } from '../../src/history/last-24-hours.ts';
import { createLogger } from '../../src/log/logger.ts';
import { freshHistoryDatabase, valuePoint } from '../support/history.ts';

const H = 3_600_000;
const NOW = Date.UTC(2026, 10, 20, 12, 30);
const CURRENT = Date.UTC(2026, 10, 20, 12);
const s = (ms: number) => ms / 1000;

describe('queryLast24Hours', () => {
  it('gives hourly count/total/max/min/avg of the last 24 clock hours, oldest first, current hour included', async () => {
    const influx = await freshHistoryDatabase();
    const writer = createHistoryWriter({ influx, log: createLogger('silent') });
    const t = (ms: number, value: ValuePoint['value'], over: Partial<ValuePoint> = {}) =>
      valuePoint({ timeMs: ms, value, ...over });
    const door = { sensor: 'Door', sensorType: 'boolean', dataType: 'boolean' as const };
    await writer.write({
      values: [
        t(CURRENT - 23 * H - 1, 999), // before the window
        t(CURRENT - 23 * H, 50), // first hour of the window
        t(CURRENT - 1, 5), // last ms of the previous hour
        t(CURRENT, 7), // first ms of the current hour
        t(CURRENT + 10 * 60_000, 10),
        t(CURRENT + 20 * 60_000, 20),
        t(CURRENT + 20 * 60_000, 30, { offsetNs: 1 }), // same ms, another value
        t(CURRENT + 45 * 60_000, 1), // later in the current hour (device clock ahead)
        t(CURRENT + H, 100), // next hour: excluded
        t(CURRENT + 5 * 60_000, 1000, { env: 'other' }), // another environment
        t(CURRENT + 1, 1, door),
        t(CURRENT + 2, 0, door),
        t(CURRENT + 3, 1, door),
        t(CURRENT, 'open', { sensor: 'Label', sensorType: 'string', dataType: 'string' }),
        t(CURRENT, { lat: 1, lon: 2 }, { sensor: 'Where', sensorType: 'gps', dataType: 'gps' }),
        t(CURRENT, 3, { device: 'd2' }),
        t(CURRENT, 4, { device: 'd2', ...door }), // not asked for (cross product of the regexes)
      ],
      events: [],
      contacts: [],
    });
    const items = ['Temperature', 'Door', 'Label', 'Where', 'Nothing'].map((sensor) => ({
      device: 'd1',
      sensor,
    }));
    items.push({ device: 'd2', sensor: 'Temperature' });
    const got = await queryLast24Hours(influx, 'demo', items, NOW);

    expect([...got.keys()]).toEqual([
      'd1|Temperature',
      'd1|Door',
      'd1|Label',
      'd1|Where',
      'd1|Nothing',
      'd2|Temperature',
    ]);
    const bucket = (
      startMs: number,
      count: number,
      total: number,
      max: number,
      min: number,
      avg: number,
    ) => ({
      sUTC: s(startMs),
      eUTC: s(startMs) + 3600,
      count,
      total,
      max,
      min,
      avg,
    });
    expect(got.get('d1|Temperature')).toEqual([
      bucket(CURRENT - 23 * H, 1, 50, 50, 50, 50),
      bucket(CURRENT - H, 1, 5, 5, 5, 5),
      bucket(CURRENT, 5, 68, 30, 1, 68 / 5),
    ]);
    const [doorBucket] = got.get('d1|Door') ?? [];
    expect(doorBucket).toMatchObject({ sUTC: s(CURRENT), count: 3, total: 2, max: 1, min: 0 });
    expect(doorBucket?.avg).toBeCloseTo(2 / 3);
    expect(got.get('d1|Label')).toEqual([]);
    expect(got.get('d1|Where')).toEqual([]);
    expect(got.get('d1|Nothing')).toEqual([]);
    expect(got.get('d2|Temperature')).toEqual([bucket(CURRENT, 1, 3, 3, 3, 3)]);
  });

  it('answers 1,000 items with names full of regex characters in one request', async () => {
    const influx = await freshHistoryDatabase();
    const writer = createHistoryWriter({ influx, log: createLogger('silent') });
    const items = Array.from({ length: 1000 }, (_, i) => ({
      device: `dev.${i} (a+b)`,
      sensor: `s:${i % 7} *x?`,
    }));
    await writer.write({
      values: items.map((it, i) => valuePoint({ ...it, timeMs: CURRENT + i, value: i })),
      events: [],
      contacts: [],
    });
    const got = await queryLast24Hours(influx, 'demo', items, NOW);
    expect(got.size).toBe(1000);
    for (const [i, it] of items.entries()) {
      expect(got.get(`${it.device}|${it.sensor}`)).toEqual([
        { sUTC: s(CURRENT), eUTC: s(CURRENT) + 3600, count: 1, total: i, max: i, min: i, avg: i },
      ]);
    }
  });

  it('gives at most 24 buckets', async () => {
    const influx = await freshHistoryDatabase();
    const writer = createHistoryWriter({ influx, log: createLogger('silent') });
    await writer.write({
      values: Array.from({ length: 30 }, (_, i) => valuePoint({ timeMs: CURRENT - i * H + 1, value: i })),
      events: [],
      contacts: [],
    });
    const buckets = (
      await queryLast24Hours(influx, 'demo', [{ device: 'd1', sensor: 'Temperature' }], NOW)
    ).get('d1|Temperature');
    expect(buckets).toHaveLength(24);
    expect(buckets?.[0]?.sUTC).toBe(s(CURRENT - 23 * H));
    expect(buckets?.at(-1)?.sUTC).toBe(s(CURRENT));
  });

  it("gives avg equal, bit for bit, to InfluxDB's mean() (total / count over the same points)", async () => {
    const influx = await freshHistoryDatabase();
    const writer = createHistoryWriter({ influx, log: createLogger('silent') });
    // Deterministic awkward values: long fractions, mixed signs and magnitudes, 1 to 300 per hour.
    let seed = 7;
    const random = () => (seed = (seed * 48271) % 2147483647) / 2147483647;
    const values: ValuePoint[] = [];
    for (let d = 0; d < 40; d++) {
      for (let k = Math.floor(random() * 300); k >= 0; k--) {
        const value = (random() - 0.4) * 10 ** Math.floor(random() * 6);
        const timeMs = CURRENT - 3 * H + Math.floor(random() * 4 * H);
        values.push(valuePoint({ device: `m${d}`, timeMs, offsetNs: k, value }));
      }
    }
    await writer.write({ values, events: [], contacts: [] });
    const items = Array.from({ length: 40 }, (_, d) => ({ device: `m${d}`, sensor: 'Temperature' }));
    const got = await queryLast24Hours(influx, 'demo', items, NOW);
    const [series] = await influx.query(
      `SELECT mean("value") AS "avg" FROM "raw"."readings" WHERE "env" = 'demo' AND time >= ${CURRENT - 3 * H}ms ` +
        `AND time < ${CURRENT + H}ms GROUP BY time(1h), "device" fill(none)`,
    );
    let compared = 0;
    for (const s of series ?? []) {
      const buckets = got.get(`${s.tags?.device ?? ''}|Temperature`) ?? [];
      for (const [time, avg] of s.values as [number, number][]) {
        expect(buckets.find((b) => b.sUTC * 1000 === time)?.avg).toBe(avg);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(100);
  });
});
