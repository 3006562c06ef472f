import { describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { createHistoryWriter } from '../../src/history/history-writer.ts';
import { queryLast24Hours, type Bucket } from '../../src/history/last-24-hours.ts';
import { rollupSelect } from '../../src/history/schema.ts';
import { msTime } from '../../src/history/influxql.ts';
import type { InfluxClient } from '../../src/history/influx-client.ts';
import { createLogger } from '../../src/log/logger.ts';
import { freshHistoryDatabase, valuePoint } from '../support/history.ts';

const MIN = 60_000;

function toBuckets(series: Awaited<ReturnType<InfluxClient['query']>>[number]): Map<string, Bucket[]> {
  const out = new Map<string, Bucket[]>();
  for (const s of series) {
    const at = (row: unknown[], c: string) => Number(row[s.columns.indexOf(c)]);
    const buckets = s.values
      .filter((row) => Number(row[s.columns.indexOf('count')] ?? 0) > 0)
      .map((row) => ({
        sUTC: at(row, 'time') / 1000,
        eUTC: at(row, 'time') / 1000 + 3600,
        count: at(row, 'count'),
        total: at(row, 'total'),
        max: at(row, 'max'),
        min: at(row, 'min'),
        avg: at(row, 'avg'),
      }));
    out.set(`${s.tags?.device}|${s.tags?.sensor}`, buckets);
  }
  return out;
}

function expectSameBuckets(actual: Bucket[] | undefined, expected: Bucket[] | undefined) {
  expect(actual?.map((b) => [b.sUTC, b.eUTC, b.count, b.max, b.min])).toEqual(
    expected?.map((b) => [b.sUTC, b.eUTC, b.count, b.max, b.min]),
  );
  for (const [i, b] of (expected ?? []).entries()) {
    expect(actual?.[i]?.total).toBeCloseTo(b.total, 9);
    expect(actual?.[i]?.avg).toBeCloseTo(b.avg, 9);
  }
}

describe('hourly rollups', () => {
  it('the continuous query materialises the same hourly buckets that last24Hours computes from raw values', async () => {
    const influx = await freshHistoryDatabase({ resampleEvery: '1s' });
    const writer = createHistoryWriter({ influx, log: createLogger('silent') });
    const now = Date.now();
    const items = [
      { device: 'd1', sensor: 'Temperature' },
      { device: 'd2', sensor: 'Humidity' },
    ];
    // 90 values spread from the start of the previous clock hour to now: whatever the time of day,
    // that is inside the CQ's FOR 2h window, whose first interval is the first hour boundary after now − 2h.
    const from = Math.floor(now / (60 * MIN)) * 60 * MIN - 60 * MIN;
    const at = (i: number) => from + Math.floor((i * (now - from)) / 90);
    await writer.write({
      values: Array.from({ length: 90 }, (_, i) => [
        valuePoint({ timeMs: at(i), value: i * 1.5 }),
        valuePoint({
          ...items[1],
          sensorType: 'relativeHumidity',
          timeMs: at(i),
          value: 90 - i,
        }),
      ]).flat(),
      events: [],
      contacts: [],
    });
    const expected = await queryLast24Hours(influx, 'demo', items, now);

    const where = `"env" = 'demo' AND time >= ${msTime(now - 3 * 60 * MIN)} AND time <= ${msTime(now)}`;
    const [direct] = await influx.query(rollupSelect(influx.database, { where }));
    const directBuckets = toBuckets(direct ?? []);
    for (const it of items)
      expectSameBuckets(
        directBuckets.get(`${it.device}|${it.sensor}`),
        expected.get(`${it.device}|${it.sensor}`),
      );

    // The continuous query itself runs every second here (RESAMPLE EVERY 1s).
    const materialised = await eventually(
      async () => {
        const [rows] = await influx.query(
          `SELECT "count", "total", "max", "min", "avg" FROM "long"."readings_hourly" WHERE "env" = 'demo' GROUP BY "device", "sensor"`,
        );
        return toBuckets(rows ?? []);
      },
      {
        until: (buckets) =>
          items.every(
            (it) => buckets.get(`${it.device}|${it.sensor}`)?.reduce((n, b) => n + b.count, 0) === 90,
          ),
        timeoutMs: 20_000,
        intervalMs: 200,
        message: 'the continuous query to materialise every value',
      },
    );
    for (const it of items)
      expectSameBuckets(
        materialised.get(`${it.device}|${it.sensor}`),
        expected.get(`${it.device}|${it.sensor}`),
      );
    const [tagged] = await influx.query(`SHOW TAG KEYS FROM "long"."readings_hourly"`);
    expect(tagged?.[0]?.values.map((r) => r[0])).toEqual(['device', 'env', 'sensor', 'sensorType']);
  });
});
