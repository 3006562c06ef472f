/**
 * `/events/list` with a labels filter: only the events of the devices that have every label asked
 * for (now), in the read API's three request forms; a label nobody has lists nothing, and a bad
 * filter is 400 INVALID_ATTRIBUTE.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { call, startApiHarness, type ApiHarness } from './api-harness.ts';

let h: ApiHarness;
let token: string;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  h = await startApiHarness({}, (fn) => cleanups.push(fn));
  ({ token } = await h.seedEnvironment('acme'));
  await h.admin.updateDevice('acme', 'device_1_hallway', { labels: { site: 'amsterdam', floor: '1' } });
  await h.admin.updateDevice('acme', 'device_2_rd_office', { labels: { site: 'amsterdam', floor: '2' } });
  await h.admin.updateDevice('acme', 'device_3_reception', { labels: { site: 'utrecht' } });
  let at = 1_700_000_000_000;
  for (const deviceName of [
    'device_1_hallway',
    'device_2_rd_office',
    'device_3_reception',
    'device_1_hallway',
  ]) {
    at += 1000;
    await h.addEvent({
      env: 'acme',
      deviceName,
      displayName: deviceName,
      sensorName: 'Temperature',
      sensorType: 'tempC',
      sensorValue: 26,
      eventCategory: 'Sensors',
      eventStatus: 'WARNING',
      eventMessage: 'Temperature - Above 25 °C - WARNING - 26.0 °C',
      receivedMs: at,
    });
  }
});

afterAll(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

const devicesOf = (r: { json: unknown }) =>
  (r.json as { data: { deviceName: string }[] }).data.map((e) => e.deviceName);

describe('/events/list by labels', () => {
  it('lists only the events of devices with every label, newest first, in each request form', async () => {
    const get = await call(h.baseUrl, '/events/list', { token, query: 'labels=site%3Damsterdam' });
    expect(get.status).toBe(200);
    expect(devicesOf(get)).toEqual(['device_1_hallway', 'device_2_rd_office', 'device_1_hallway']);
    const json = await call(h.baseUrl, '/events/list', {
      token,
      body: { labels: { site: 'amsterdam', floor: '2' } },
      contentType: 'application/json',
    });
    expect(devicesOf(json)).toEqual(['device_2_rd_office']);
    const form = await call(h.baseUrl, '/events/list', { token, body: 'labels=site%3Dutrecht&limit=5' });
    expect(devicesOf(form)).toEqual(['device_3_reception']);
    // limit counts the events that pass the filter.
    const one = await call(h.baseUrl, '/events/list', { token, query: 'labels=site%3Damsterdam&limit=1' });
    expect(devicesOf(one)).toEqual(['device_1_hallway']);
  });

  it('follows the devices’ labels as they are now, and lists nothing for a label nobody has', async () => {
    await h.admin.updateDevice('acme', 'device_3_reception', { labels: { site: 'amsterdam' } });
    const now = await call(h.baseUrl, '/events/list', { token, query: 'labels=site%3Damsterdam' });
    expect(devicesOf(now)).toContain('device_3_reception');
    const none = await call(h.baseUrl, '/events/list', { token, query: 'labels=site%3Drotterdam' });
    expect([none.status, devicesOf(none)]).toEqual([200, []]);
  });

  it('refuses a filter that is not key=value (400 INVALID_ATTRIBUTE)', async () => {
    const r = await call(h.baseUrl, '/events/list', { token, query: 'labels=amsterdam' });
    expect(r.status).toBe(400);
    expect((r.json as { error: { code: string; attribute: string } }).error).toMatchObject({
      code: 'INVALID_ATTRIBUTE',
      attribute: 'labels',
    });
  });
});
