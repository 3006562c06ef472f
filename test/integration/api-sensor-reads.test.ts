/**
 * The sensors endpoints remember which definition each device had, to read everything in one
 * pipeline: these tests change definitions and devices between requests and expect each answer to
 * show the change at once.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument,
   @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   response bodies are untyped on purpose. */
import { describe, expect, it } from 'vitest';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { call, COMFORT_SENSORS, PARSER, startApiHarness } from './api-harness.ts';

const names = (sensors: { sensorName: string }[]) => sensors.map((s) => s.sensorName);

async function setup() {
  const h = await startApiHarness();
  const { token } = await h.seedEnvironment('demo');
  const t0 = Date.UTC(2026, 10, 22, 5);
  await h.setState('demo', 'device_1_hallway', 'Temperature', { value: 21.5, updatedMs: t0 });
  await h.setState('demo', 'device_1_hallway', 'Pressure', { value: 1013, updatedMs: t0 });
  const post = async (path: string, body: unknown) => {
    const res = await call(h.baseUrl, path, { token, body });
    expect(res.status).toBe(200);
    return res.json.data;
  };
  return { h, post };
}

const withPressure: DefinitionSpec = {
  ...COMFORT_SENSORS,
  dataPoints: [
    ...COMFORT_SENSORS.dataPoints,
    { name: 'Pressure', displayName: 'Pressure', dataType: 'number', hysteresis: 0, thresholds: [] },
  ],
};

describe('sensors endpoints after definition and device changes', () => {
  it('show a data point added to the definition in the very next answer, with its state', async () => {
    const { h, post } = await setup();
    const before = await post('/sensors/batchList', { devices: ['device_1_hallway', 'device_3_reception'] });
    expect(names(before[0].sensors)).toEqual(COMFORT_SENSORS.dataPoints.map((d) => d.name));

    await h.admin.applyDefinition({ kind: 'private', env: 'demo' }, withPressure, PARSER);
    const after = await post('/sensors/batchList', { devices: ['device_1_hallway', 'device_3_reception'] });
    expect(names(after[0].sensors)).toContain('Pressure');
    expect(after[0].sensors.at(-1)).toMatchObject({ sensorName: 'Pressure', rawValue: 1013 });
    const list = await post('/sensors/list', { deviceName: 'device_1_hallway' });
    expect(list.at(-1)).toMatchObject({ sensorName: 'Pressure', rawValue: 1013 });
  });

  it('follow a device to another definition at once', async () => {
    const { h, post } = await setup();
    expect((await post('/sensors/list', { deviceName: 'device_1_hallway' }))[0].rawValue).toBe(21.5);
    await h.admin.applyDefinition(
      { kind: 'private', env: 'demo' },
      { ...withPressure, name: 'Barometer', dataPoints: withPressure.dataPoints.slice(-1) },
      PARSER,
    );
    await h.admin.updateDevice('demo', 'device_1_hallway', { definitionName: 'Barometer' });

    const list = await post('/sensors/list', { deviceName: 'device_1_hallway' });
    expect(names(list)).toEqual(['Pressure']);
    expect(list[0].rawValue).toBe(1013);
    const details = await post('/sensors/details', {
      deviceName: 'device_1_hallway',
      sensorName: 'Pressure',
    });
    expect(details).toMatchObject({ sensorName: 'Pressure', rawValue: 1013 });
    const gone = await call(h.baseUrl, '/sensors/details', {
      token: (await h.admin.createToken('demo', 'second', 0)).token,
      body: { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
    });
    expect(gone.status).toBe(404);
    expect(gone.json.error.code).toBe('SENSOR_NOT_FOUND');
  });

  it('answer DEVICE_NOT_FOUND for a device deleted since the last request', async () => {
    const { h, post } = await setup();
    await post('/sensors/batchList', { devices: ['device_1_hallway'] });
    await h.admin.deleteDevice('demo', 'device_1_hallway');
    const res = await call(h.baseUrl, '/sensors/batchList', {
      token: (await h.admin.createToken('demo', 'second', 0)).token,
      body: { devices: ['device_1_hallway'] },
    });
    expect(res.status).toBe(404);
    expect(res.json.error.code).toBe('DEVICE_NOT_FOUND');
  });
});
