/** Helpers for history tests: a fresh InfluxDB database with Vigil's schema, and value points. */
import { createInfluxClient, type InfluxClient } from '../../src/history/influx-client.ts';
import { ensureHistorySchema, type HistorySchemaOptions } from '../../src/history/schema.ts';
import type { ValuePoint } from '../../src/history/history-writer.ts';
import { testConfig } from './context.ts';

export async function freshHistoryDatabase(
  schema: Partial<HistorySchemaOptions> = {},
): Promise<InfluxClient> {
  const config = testConfig();
  const influx = createInfluxClient({ url: config.influxUrl, database: config.influxDatabase });
  await ensureHistorySchema(influx, {
    rawRetention: 'INF',
    rollupRetention: 'INF',
    resampleEvery: '1m',
    ...schema,
  });
  return influx;
}

/** A temperature value of demo/d1/Temperature; override what the test is about. */
export function valuePoint(over: Partial<ValuePoint>): ValuePoint {
  return {
    env: 'demo',
    device: 'd1',
    sensor: 'Temperature',
    sensorType: 'tempC',
    dataType: 'temperature',
    timeMs: 0,
    offsetNs: 0,
    value: 20,
    status: 'SUCCESS',
    ...over,
  };
}
