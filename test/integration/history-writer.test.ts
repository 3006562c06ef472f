import { describe, expect, it } from 'vitest';
import { createInfluxClient, type InfluxClient } from '../../src/history/influx-client.ts';
import { createHistoryWriter, type ValuePoint } from '../../src/history/history-writer.ts';
import { ensureHistorySchema } from '../../src/history/schema.ts';
import { exportValues } from '../../src/history/export-values.ts';
import { createLogger } from '../../src/log/logger.ts';
import type { DataType, DataValue, EventRecord } from '../../src/domain/types.ts';
import { testConfig } from '../support/context.ts';

const schema = { rawRetention: 'INF', rollupRetention: 'INF', resampleEvery: '1m' };
const log = createLogger('silent');

async function freshInflux(): Promise<InfluxClient> {
  const config = testConfig();
  const influx = createInfluxClient({ url: config.influxUrl, database: config.influxDatabase });
  await ensureHistorySchema(influx, schema);
  return influx;
}

async function rows(influx: InfluxClient, q: string): Promise<Record<string, unknown>[]> {
  const [series] = await influx.query(q, { epoch: 'rfc3339' });
  return (series ?? []).flatMap((s) =>
    s.values.map((v) => ({ ...s.tags, ...Object.fromEntries(s.columns.map((c, i) => [c, v[i]])) })),
  );
}

/** Retention policy rows by name: [name, duration, shardGroupDuration, replicaN, default]. */
async function retentionPolicies(influx: InfluxClient): Promise<Record<string, unknown[] | undefined>> {
  const [rps] = await influx.query(`SHOW RETENTION POLICIES ON "${influx.database}"`);
  return Object.fromEntries((rps?.[0]?.values ?? []).map((r): [string, unknown[]] => [String(r[0]), r]));
}

const T0 = Date.UTC(2026, 10, 20, 10, 0, 0, 123);

function point(over: Partial<ValuePoint>): ValuePoint {
  return {
    env: 'demo',
    device: 'd1',
    sensor: 'Temperature',
    sensorType: 'tempC',
    dataType: 'temperature',
    timeMs: T0,
    offsetNs: 0,
    value: 20,
    status: 'SUCCESS',
    ...over,
  };
}

describe('ensureHistorySchema', () => {
  it('is idempotent: a second run leaves one raw (default) and one long policy and one rollup query', async () => {
    const influx = await freshInflux();
    await ensureHistorySchema(influx, schema);
    const byName = await retentionPolicies(influx);
    expect(byName.raw?.[4]).toBe(true);
    expect(byName.long?.[4]).toBe(false);
    const [cqs] = await influx.query('SHOW CONTINUOUS QUERIES', { database: null });
    const mine = cqs?.find((s) => s.name === influx.database)?.values ?? [];
    expect(mine).toHaveLength(1);
    expect(String(mine[0]?.[1])).toContain('RESAMPLE EVERY 1m FOR 2h');
  });

  it('applies changed retentions and replaces the rollup query when its text changes', async () => {
    const influx = await freshInflux();
    await ensureHistorySchema(influx, { rawRetention: '30d', rollupRetention: '520w', resampleEvery: '5m' });
    const byName = await retentionPolicies(influx);
    expect(byName.raw?.[1]).toBe('720h0m0s');
    expect(byName.long?.[1]).toBe('87360h0m0s');
    const [cqs] = await influx.query('SHOW CONTINUOUS QUERIES', { database: null });
    const mine = cqs?.find((s) => s.name === influx.database)?.values ?? [];
    expect(mine).toHaveLength(1);
    expect(String(mine[0]?.[1])).toContain('RESAMPLE EVERY 5m FOR 2h');
  });
});

describe('history writer', () => {
  it('round-trips every data type, with its status, through export', async () => {
    const influx = await freshInflux();
    const writer = createHistoryWriter({ influx, log });
    const cases: [DataType, string, DataValue][] = [
      ['string', 'string', 'hello, "world"\\ \n next line'],
      ['integer', 'integer', 42],
      ['number', 'number', 3.14159],
      ['boolean', 'boolean', true],
      ['temperature', 'tempC', -12.5],
      ['humidity', 'relativeHumidity', 45.2],
      ['illuminance', 'lux', 300],
      ['millivolts', 'milliVolts', 3300],
      ['co2', 'co2', 612],
      ['occupancy', 'occupancy', 1],
      ['gps', 'gps', { lat: 52.37, lon: 4.89 }],
    ];
    await writer.write({
      values: cases.map(([dataType, sensorType, value], i) =>
        point({ sensor: dataType, sensorType, dataType, value, timeMs: T0 + i, status: 'WARNING' }),
      ),
      events: [],
      contacts: [],
    });
    for (const [i, [dataType, , value]] of cases.entries()) {
      const out = [];
      for await (const v of exportValues(influx, { env: 'demo', device: 'd1', sensor: dataType, dataType }))
        out.push(v);
      expect(out, dataType).toEqual([{ timeMs: T0 + i, value }]);
    }
    const statuses = await rows(influx, 'SELECT "severity" FROM "raw"."readings"');
    expect(statuses).toHaveLength(cases.length);
    expect(statuses.every((r) => r.severity === 2)).toBe(true); // WARNING
    // The status is the severity alone: no string field repeats it.
    const fields = await rows(influx, 'SHOW FIELD KEYS FROM "raw"."readings"');
    expect(fields.map((r) => r.fieldKey).sort()).toEqual(['lat', 'lon', 'severity', 'text', 'value']);
    await writer.close();
  });

  it('escapes tag values: commas, spaces, equals, quotes, backslashes and unicode come back unchanged', async () => {
    const influx = await freshInflux();
    const writer = createHistoryWriter({ influx, log });
    const device = 'a,b c=d "q" x\\y Zürich 🌡';
    const sensor = 'Temp = 1, inside';
    await writer.write({ values: [point({ device, sensor })], events: [], contacts: [] });
    const got = await rows(influx, 'SELECT "value", "device", "sensor" FROM "raw"."readings"');
    expect(got).toEqual([expect.objectContaining({ device, sensor, value: 20 })]);
  });

  it('keeps two distinct values of one data point in the same millisecond', async () => {
    const influx = await freshInflux();
    const writer = createHistoryWriter({ influx, log });
    await writer.write({
      values: [point({ offsetNs: 17, value: 1 }), point({ offsetNs: 912_345, value: 2 })],
      events: [],
      contacts: [],
    });
    const got = await rows(influx, 'SELECT "value" FROM "raw"."readings"');
    expect(got.map((r) => r.value)).toEqual([1, 2]);
    expect(got.map((r) => r.time)).toEqual([
      '2026-11-20T10:00:00.123000017Z',
      '2026-11-20T10:00:00.123912345Z',
    ]);
  });

  it('does not duplicate points when a batch is replayed', async () => {
    const influx = await freshInflux();
    const writer = createHistoryWriter({ influx, log });
    const event: EventRecord = {
      id: 'e1',
      env: 'demo',
      deviceName: 'd1',
      displayName: 'Device 1',
      sensorName: 'Temperature',
      sensorType: 'tempC',
      sensorValue: 31,
      eventStatus: 'CRITICAL',
      eventCategory: 'Sensors',
      eventMessage: 'Temperature - Overheating - CRITICAL - 31.0 °C',
      receivedMs: T0 + 5,
    };
    const batch = {
      values: [point({ value: 31, status: 'CRITICAL' as const }), point({ timeMs: T0 + 1, value: 32 })],
      events: [event],
      contacts: [{ env: 'demo', device: 'd1', timeMs: T0, offsetNs: 99 }],
    };
    await writer.write(batch);
    await writer.write(batch);
    const [counts] = await influx
      .query(
        'SELECT count("value") FROM "raw"."readings"; SELECT count("seen") FROM "raw"."contacts"; SELECT count("message") FROM "long"."events"',
      )
      .then((r) => [r.map((s) => s[0]?.values[0]?.[1])]);
    expect(counts).toEqual([2, 1, 1]);
    const events = await rows(influx, 'SELECT * FROM "long"."events"');
    expect(events).toEqual([
      expect.objectContaining({
        env: 'demo',
        device: 'd1',
        category: 'Sensors',
        status: 'CRITICAL',
        sensor: 'Temperature',
        sensorType: 'tempC',
        value: 31,
        message: event.eventMessage,
      }),
    ]);
  });

  it('splits more than 5,000 lines into several writes and keeps every point', async () => {
    const influx = await freshInflux();
    const writer = createHistoryWriter({ influx, log });
    const values = Array.from({ length: 12_001 }, (_, i) => point({ timeMs: T0 + i, value: i }));
    await writer.write({ values, events: [], contacts: [] });
    const [series] = await influx.query('SELECT count("value"), sum("value") FROM "raw"."readings"');
    expect(series?.[0]?.values[0]?.slice(1)).toEqual([12_001, (12_000 * 12_001) / 2]);
  });

  it('throws when InfluxDB refuses the write, so the job is retried', async () => {
    const config = testConfig();
    const influx = createInfluxClient({ url: config.influxUrl, database: config.influxDatabase });
    const writer = createHistoryWriter({ influx, log });
    // InfluxDB's 404 (no such database): a refusal, not an outage.
    await expect(writer.write({ values: [point({})], events: [], contacts: [] })).rejects.toMatchObject({
      name: 'InfluxError',
      status: 404,
      outage: false,
    });
    await writer.close();
    await writer.close();
  });
});
