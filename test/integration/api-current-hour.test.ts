/**
 * last24Hours' current hour over the real state store, history writer and API: it comes from the
 * state the worker keeps (even before InfluxDB has the values), and from InfluxDB once a value of
 * the hour arrived that did not become current (out of order), so it still holds every value.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access --
   response bodies are untyped on purpose: these tests check them at run time. */
import { describe, expect, it } from 'vitest';
import { createStateStore, type DeviceReadings } from '../../src/state/state-store.ts';
import { call, startApiHarness } from './api-harness.ts';

const HOUR = 3_600_000;

/** One Temperature value of device_1_hallway as the worker hands it to the state store. */
function temperature(timeMs: number, value: number): DeviceReadings {
  return {
    env: 'demo',
    device: 'device_1_hallway',
    displayName: 'Hallway',
    contactMs: timeMs,
    timeoutMs: 0,
    sensors: new Map([
      [
        'Temperature',
        { statuses: [], descriptions: [], rulesId: 'none', suppressed: false, sensorType: 'tempC' },
      ],
    ]),
    values: [
      {
        sensor: 'Temperature',
        timeMs,
        offsetNs: 0,
        valueJson: String(value),
        currentValue: `${value} °C`,
        outcomes: [-1],
        receivedMs: 0,
        number: value,
      },
    ],
  };
}

describe('last24Hours: the current hour', () => {
  it('comes from state, and from InfluxDB once a value of the hour arrived out of order', async () => {
    const h = await startApiHarness();
    const { token } = await h.seedEnvironment('demo');
    const state = createStateStore({ redis: h.redis, keys: h.keys, eventsCap: 1000 });
    const hour = Math.floor(Date.now() / HOUR) * HOUR;
    const details = async () => {
      const res = await call(h.baseUrl, '/sensors/details', {
        token,
        body: { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
      });
      expect(res.status).toBe(200);
      return (res.json.data.last24Hours as { sUTC: number; count: number; total: number }[]).map((b) => [
        b.sUTC,
        b.count,
        b.total,
      ]);
    };

    // Two values applied; InfluxDB has only the first yet: the state answers, with both.
    await state.applyReadings([temperature(hour + 10, 20)], Date.now());
    await state.applyReadings([temperature(hour + 30, 22)], Date.now());
    await h.writeHistory('demo', 'device_1_hallway', 'Temperature', [{ timeMs: hour + 10, value: 20 }]);
    expect(await details()).toEqual([[hour / 1000, 2, 42]]);

    // A value older than the current one: InfluxDB, which has all three by now, answers.
    await state.applyReadings([temperature(hour + 20, 100)], Date.now());
    await h.writeHistory('demo', 'device_1_hallway', 'Temperature', [
      { timeMs: hour + 20, value: 100 },
      { timeMs: hour + 30, value: 22 },
    ]);
    expect(await details()).toEqual([[hour / 1000, 3, 142]]);
  });
});
