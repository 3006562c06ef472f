/**
 * The read API over the real pipeline: payloads posted to the real gateway, processed by the real
 * worker (sandboxed parser, Lua state step, history writer), then read back through every kind of
 * endpoint of the API that `startVigil` serves, each answer checked against the published field
 * tables.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument --
   response bodies are untyped on purpose: these tests check them at run time. */
import { describe, expect, it, onTestFinished } from 'vitest';
import { queryLast24Hours } from '../../src/history/last-24-hours.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { eventually } from '../support/eventually.ts';
import { storedState } from '../support/state.ts';
import { call, COMFORT_SENSORS, startApiHarness } from './api-harness.ts';
import { BUCKET, DETAILS, DEVICE, EVENT, expectShape, LISTED, UTC } from './api-shapes.ts';

const PARSER = 'function parsePayload(s) { const j = JSON.parse(s); delete j.deviceName; return j; }';

describe('read API over the real gateway and worker', () => {
  it('shows posted values, statuses, events, contact, history and ingestion outcomes', async () => {
    const h = await startApiHarness({ roles: 'gateway,worker,api' });
    const { token, apiKey } = await h.seedEnvironment('demo');
    const spec = structuredClone(COMFORT_SENSORS);
    spec.dataPoints[0]!.thresholds = [{ status: 'WARNING', above: 25 }];
    await h.admin.applyDefinition({ kind: 'private', env: 'demo' }, spec, PARSER);

    const vigil = await startVigil(h.config, createLogger('silent'));
    onTestFinished(() => vigil.close());
    const api = `http://127.0.0.1:${vigil.ports.api}`;
    expect((await call(api, '/openapi.json')).status).toBe(200);
    const gateway = `http://127.0.0.1:${vigil.ports.gateway}`;

    const submit = (body: unknown) => call(gateway, `/gateway/submit/${apiKey}`, { body });
    expect((await submit({ deviceName: 'device_1_hallway', Temperature: 26.5, Humidity: 45.2 })).status).toBe(
      202,
    );

    const list = await eventually(
      () => call(api, '/sensors/list', { token, body: { deviceName: 'device_1_hallway' } }),
      { until: (r) => r.json?.data?.[0]?.rawValue === 26.5 },
    );
    expect(list.json.data[0]).toMatchObject({
      sensorName: 'Temperature',
      currentValue: '26.5 °C',
      rawValue: 26.5,
      currentStatus: 'WARNING',
      suppressed: false,
      lastSuccessAt: null,
    });
    expect(list.json.data[0].updatedAt).toBe(list.json.data[0].currentSuccessAt);
    expect(list.json.data[1]).toMatchObject({
      sensorName: 'Humidity',
      currentValue: '45.2 %',
      currentStatus: 'SUCCESS',
    });
    expect(list.json.data[2]).toMatchObject({ sensorName: 'Illuminance', rawValue: null, updatedAt: null });

    const devices = await call(api, '/devices/list', { token });
    expect(devices.json.data[0].lastContactUTC).toMatch(/Z$/);
    expect(devices.json.data[1].lastContactUTC).toBeNull();

    expect((await submit({ deviceName: 'device_1_hallway', Temperature: 20 })).status).toBe(202);
    const events = await eventually(() => call(api, '/events/list', { token }), {
      until: (r) => r.json?.data?.length === 2,
    });
    expect(events.json.data.map((e: { eventStatus: string }) => e.eventStatus)).toEqual([
      'SUCCESS',
      'WARNING',
    ]);
    expect(events.json.data[0]).toMatchObject({
      deviceName: 'device_1_hallway',
      displayName: 'Hallway',
      sensorName: 'Temperature',
      sensorType: 'tempC',
      sensorValue: 20,
      eventCategory: 'Sensors',
      eventMessage: 'Temperature - Returned to success status - SUCCESS - 20.0 °C',
    });
    expect(events.json.data[1].eventMessage).toMatch(/^Temperature - .+ - WARNING - 26\.5 °C$/);

    const details = await eventually(
      () =>
        call(api, '/sensors/details', {
          token,
          body: { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
        }),
      { until: (r) => r.json?.data?.last24Hours?.[0]?.count === 2 },
    );
    expect(details.json.data.last24Hours).toHaveLength(1);
    expect(details.json.data.last24Hours[0]).toMatchObject({ count: 2, total: 46.5, max: 26.5, min: 20 });
    // The current hour comes from the state in Redis; InfluxDB, once written, gives the same bucket.
    const kept = await storedState(h.redis, h.keys.deviceState('demo', 'device_1_hallway'));
    expect(kept.points.Temperature?.hour).toMatchObject({ count: 2, total: 46.5, min: 20, max: 26.5 });
    const item = { device: 'device_1_hallway', sensor: 'Temperature' };
    const fromInflux = await eventually(() => queryLast24Hours(h.influx, 'demo', [item], Date.now()), {
      until: (m) => m.get('device_1_hallway|Temperature')?.[0]?.count === 2,
    });
    expect(fromInflux.get('device_1_hallway|Temperature')).toEqual(details.json.data.last24Hours);

    const log = await call(api, '/ingest/log', { token });
    expect(log.json.data).toHaveLength(2);
    expect(log.json.data[0]).toMatchObject({
      gateway: 'submit',
      deviceName: 'device_1_hallway',
      outcome: 'accepted',
    });

    for (const d of devices.json.data) expectShape(d, DEVICE);
    for (const sensor of list.json.data) expectShape(sensor, LISTED);
    for (const e of events.json.data) expectShape(e, EVENT);
    expectShape(details.json.data, DETAILS);
    for (const b of details.json.data.last24Hours) expectShape(b, BUCKET);
    const byDefinition = await call(api, '/devices/listByDefinitionNames', {
      token,
      body: { definitionName: 'ComfortSensors', definitionIsPublic: false },
    });
    for (const d of byDefinition.json.data) expectShape(d, DEVICE);
    const batchList = await call(api, '/sensors/batchList', {
      token,
      body: { devices: ['device_1_hallway'] },
    });
    for (const s of batchList.json.data[0].sensors) expectShape(s, UTC);
    const batchDetails = await call(api, '/sensors/batchDetails', {
      token,
      body: { sensors: [{ deviceName: 'device_1_hallway', sensorName: 'Temperature' }] },
    });
    expectShape(batchDetails.json.data[0].sensors[0], DETAILS);
    expect(batchDetails.json.data[0].sensors[0].last24Hours).toEqual(details.json.data.last24Hours);
    const deviceEvents = await call(api, '/devices/events', {
      token,
      body: { deviceName: 'device_1_hallway' },
    });
    expect(deviceEvents.json.data).toEqual(events.json.data);
    const exported = await call(api, '/sensors/export', {
      token,
      body: { deviceName: 'device_1_hallway', sensorName: 'Temperature', format: 'csv' },
    });
    expect(
      exported.text
        .trimEnd()
        .split('\n')
        .map((l) => l.split(',')[1]),
    ).toEqual(['value', '26.5', '20']);
    expect((await call(`http://127.0.0.1:${vigil.ports.ops}`, '/metrics')).status).toBe(200);

    expect((await submit({ deviceName: 'nobody', Temperature: 1 })).status).toBe(202);
    const unknown = await eventually(() => call(api, '/ingest/log', { token, query: 'limit=1' }), {
      until: (r) => r.json?.data?.[0]?.code === 'UNKNOWN_DEVICE',
    });
    expect(unknown.json.data[0]).toMatchObject({ outcome: 'rejected', code: 'UNKNOWN_DEVICE' });
  });
});
