/**
 * The monthly export allowance of sensors/export (docs/api.md#export) is taken before the export
 * streams, in one step, so parallel exports cannot overrun it; an export that does not complete —
 * InfluxDB failing part-way, the client going away — gives it back.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access --
   response bodies are untyped on purpose: these tests check them at run time. */
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import { createInfluxClient } from '../../src/history/influx-client.ts';
import { eventually } from '../support/eventually.ts';
import { failingInfluxProxy } from '../support/failing-influx-proxy.ts';
import { delayingInfluxProxy } from '../support/influx-proxy.ts';
import { call, startApiHarness, type ApiHarness } from './api-harness.ts';

const N = 20_000;
const end = Math.floor(Date.now() / 1000) * 1000 - 60_000;
const values = Array.from({ length: N }, (_, i) => ({ timeMs: end - (N - 1 - i) * 1000, value: i / 100 }));
const ITEM = { deviceName: 'device_1_hallway', sensorName: 'Temperature' };

async function withHistory(): Promise<{ h: ApiHarness; token: string }> {
  const h = await startApiHarness({ exportLimitPerMonth: 1 });
  const { token } = await h.seedEnvironment('demo');
  await h.writeHistory('demo', ITEM.deviceName, ITEM.sensorName, values);
  return { h, token };
}

/** The allowance used this month, as documented: the hash field `<device>|<sensor>`. */
const used = (h: ApiHarness) =>
  h.redis.hget(
    h.keys.exports('demo', new Date().toISOString().slice(0, 7)),
    `${ITEM.deviceName}|${ITEM.sensorName}`,
  );

/** An app of the same Redis reading history through `influxUrl`. */
const appThrough = (h: ApiHarness, influxUrl: string) =>
  h.startApp({ influx: createInfluxClient({ url: influxUrl, database: h.config.influxDatabase }) });

/** Starts an export, reads its first bytes, and goes away. */
function leaveMidStream(baseUrl: string, token: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = request(`${baseUrl}/sensors/export`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    });
    req.on('response', (res) => {
      expect(res.statusCode).toBe(200);
      res.once('data', () => {
        req.destroy();
        resolve();
      });
    });
    req.on('error', reject);
    req.end(JSON.stringify(ITEM));
  });
}

describe('sensors/export allowance', () => {
  it('lets exactly one of 8 parallel exports through with a limit of 1, and none of 8 more', async () => {
    const { h, token } = await withHistory();
    const exportOnce = () => call(h.baseUrl, '/sensors/export', { token, body: ITEM });
    const first = await Promise.all(Array.from({ length: 8 }, exportOnce));
    const outcomes = first.map((r) => (r.status === 200 ? 200 : `${r.status} ${r.json?.error?.code}`));
    expect(outcomes.filter((o) => o === 200)).toHaveLength(1);
    expect(outcomes.filter((o) => o === '429 EXPORT_LIMIT_REACHED')).toHaveLength(7);
    expect(first.find((r) => r.status === 200)?.json.data.values).toHaveLength(N);
    const second = await Promise.all(Array.from({ length: 8 }, exportOnce));
    expect(second.map((r) => `${r.status} ${r.json?.error?.code}`)).toEqual(
      Array.from({ length: 8 }, () => '429 EXPORT_LIMIT_REACHED'),
    );
    expect(await used(h)).toBe('1');
  });

  it('gives the allowance back when InfluxDB fails part-way through an export', async () => {
    const { h, token } = await withHistory();
    const failing = await appThrough(
      h,
      await failingInfluxProxy(h.config.influxUrl, { rowsBeforeFailure: 1000 }),
    );
    // The first page went out, so the answer is cut short rather than an error.
    await expect(call(failing, '/sensors/export', { token, body: ITEM })).rejects.toThrow();
    await eventually(() => used(h), {
      until: (n) => n === null,
      timeoutMs: 5000,
      message: 'the failed export to give its allowance back',
    });
    const ok = await call(h.baseUrl, '/sensors/export', { token, body: ITEM });
    expect(ok.status).toBe(200);
    expect(ok.json.data.values).toHaveLength(N);
  });

  it('gives the allowance back when the client goes away mid-stream', async () => {
    const { h, token } = await withHistory();
    // Every page takes a while, so the export is still streaming when the client leaves.
    const slow = await appThrough(h, await delayingInfluxProxy(h.config.influxUrl, { queryMs: 300 }));
    await leaveMidStream(slow, token);
    await eventually(() => used(h), {
      until: (n) => n === null,
      timeoutMs: 5000,
      message: 'the abandoned export to give its allowance back',
    });
    expect((await call(h.baseUrl, '/sensors/export', { token, body: ITEM })).status).toBe(200);
  });
});
