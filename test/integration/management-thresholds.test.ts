/**
 * The management API's threshold and suppression operations on the roles `startVigil` serves:
 * each operation's success, validation errors by their code, 403 for tokens without the scope,
 * 404 across environments, 409 on a stale revision, the audit entry of each change, and a worker
 * applying a changed override (within its catalog's cache time, waited for, never slept).
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   response bodies are untyped on purpose: these tests check them at run time. */
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { call, COMFORT_SENSORS, PARSER, type ApiHarness } from './api-harness.ts';
import { startManagementHarness } from './management-harness.ts';

const HALLWAY = 'device_1_hallway';

describe('management API: thresholds and suppression', () => {
  let h: ApiHarness;
  let api: string;
  let gateway: string;
  let apiKey: string;
  let admin: string;
  let operator: string;
  let reader: string;
  let otherAdmin: string;

  beforeAll(async () => {
    const m = await startManagementHarness({ roles: 'gateway,worker,api' });
    ({ h, api, gateway, apiKey } = m);
    ({ admin, operator, reader, otherAdmin } = m.tokens);
    // CO2 has rules of its own in the definition: one that waits, hysteresis and a stale rule.
    const spec = structuredClone(COMFORT_SENSORS);
    const co2 = spec.dataPoints.find((p) => p.name === 'CO2')!;
    co2.thresholds = [{ status: 'WARNING', above: 1000, description: 'Ventilate', forMs: 600_000 }];
    co2.hysteresis = 50;
    co2.stale = { afterMs: 1_800_000, status: 'WARNING' };
    await h.admin.applyDefinition({ kind: 'private', env: 'acme' }, spec, PARSER);
    await h.admin.createDevice('acme', {
      name: 'freezer-7',
      definitionName: 'ComfortSensors',
      definitionIsPublic: false,
    });
    return () => m.close();
  });

  const post = (path: string, token: string, body: unknown) =>
    call(api, path, { token, body, contentType: 'application/json' });
  const audit = async (filter: Record<string, unknown> = {}, token = admin) =>
    (await post('/audit/list', token, filter)).json.data.entries;
  const rulesOf = async (deviceName: string, sensorName: string, token = admin) => {
    const r = await post('/thresholds/get', token, { deviceName });
    expect(r.status).toBe(200);
    return r.json.data.dataPoints.find((p: { sensorName: string }) => p.sensorName === sensorName);
  };

  it("answers every data point's definition rules, override, which applies and suppression", async () => {
    const r = await post('/thresholds/get', reader, { deviceName: HALLWAY });
    expect(r.status).toBe(200);
    expect(r.json.data).toMatchObject({
      deviceName: HALLWAY,
      definitionName: 'ComfortSensors',
      definitionIsPublic: false,
    });
    expect(r.json.data.dataPoints.map((p: { sensorName: string }) => p.sensorName)).toEqual(
      COMFORT_SENSORS.dataPoints.map((p) => p.name),
    );
    expect(r.json.data.dataPoints.find((p: { sensorName: string }) => p.sensorName === 'CO2')).toEqual({
      sensorName: 'CO2',
      displayName: 'CO2',
      dataType: 'co2',
      // As a definition writes them: what /thresholds/set takes back.
      definition: {
        rules: [{ status: 'WARNING', above: 1000, description: 'Ventilate', for: '10m' }],
        hysteresis: 50,
        stale: { after: '30m', status: 'WARNING' },
      },
      override: null,
      applies: 'definition',
      suppression: null,
    });
    const unknown = await post('/thresholds/get', reader, { deviceName: 'nope' });
    expect([unknown.status, unknown.json.error.code]).toEqual([404, 'DEVICE_NOT_FOUND']);
  });

  it('sets an override with a revision, refuses a stale one with 409 CONFLICT, audited', async () => {
    const rules = { rules: [{ status: 'CRITICAL', above: 1500, for: '5m' }], hysteresis: 25 };
    const first = await post('/thresholds/set', admin, { deviceName: HALLWAY, sensorName: 'CO2', rules });
    expect(first.status).toBe(200);
    expect(first.json.data).toEqual({
      deviceName: HALLWAY,
      sensorName: 'CO2',
      override: { ...rules, stale: null, revision: 1 },
      changed: true,
    });
    expect(await rulesOf(HALLWAY, 'CO2')).toMatchObject({
      override: { ...rules, stale: null, revision: 1 },
      applies: 'override',
    });
    const [entry] = await audit({ action: 'threshold' });
    expect(entry).toMatchObject({
      actor: 'token:automation',
      action: 'threshold.set',
      target: `${HALLWAY}/CO2`,
      after: { ...rules, stale: null, revision: 1 },
    });
    expect(entry.before).toBeUndefined();

    // The same rules again change nothing: no new revision, no audit entry.
    const same = await post('/thresholds/set', admin, { deviceName: HALLWAY, sensorName: 'CO2', rules });
    expect(same.json.data).toMatchObject({ changed: false, override: { revision: 1 } });
    expect(await audit({ action: 'threshold' })).toHaveLength(1);

    // A rule list alone, based on revision 1.
    const list = [{ status: 'WARNING', above: 900 }];
    const second = await post('/thresholds/set', admin, {
      deviceName: HALLWAY,
      sensorName: 'CO2',
      rules: list,
      revision: 1,
    });
    expect(second.json.data.override).toEqual({ rules: list, hysteresis: 0, stale: null, revision: 2 });
    const [update] = await audit({ action: 'threshold.set' });
    expect(update).toMatchObject({
      before: { revision: 1, hysteresis: 25 },
      after: { rules: list, revision: 2 },
    });

    const stale = await post('/thresholds/set', admin, {
      deviceName: HALLWAY,
      sensorName: 'CO2',
      rules: [{ status: 'WARNING', above: 950 }],
      revision: 1,
    });
    expect([stale.status, stale.json.error.code, stale.json.error.revision]).toEqual([409, 'CONFLICT', 2]);
    // revision 0: "there is none yet", refused where there is one, accepted where there is not.
    const notNew = await post('/thresholds/set', admin, {
      deviceName: HALLWAY,
      sensorName: 'CO2',
      rules: list,
      revision: 0,
    });
    expect([notNew.status, notNew.json.error.code]).toEqual([409, 'CONFLICT']);
    const fresh = await post('/thresholds/set', admin, {
      deviceName: HALLWAY,
      sensorName: 'Humidity',
      rules: [{ status: 'WARNING', above: 70 }],
      revision: 0,
    });
    expect(fresh.json.data.override.revision).toBe(1);
    expect((await rulesOf(HALLWAY, 'CO2')).override.revision).toBe(2);
  });

  it("takes back what it answers: a data point's rules round-trip unchanged", async () => {
    const { definition } = await rulesOf('device_3_reception', 'CO2');
    const set = await post('/thresholds/set', admin, {
      deviceName: 'device_3_reception',
      sensorName: 'CO2',
      rules: definition,
    });
    expect(set.json.data.override).toEqual({ ...definition, revision: 1 });
    const again = await post('/thresholds/set', admin, {
      deviceName: 'device_3_reception',
      sensorName: 'CO2',
      rules: (await rulesOf('device_3_reception', 'CO2')).override,
    });
    // The override's own revision is not a rules field.
    expect([again.status, again.json.error.code]).toEqual([400, 'INVALID_INPUT']);
    const { revision: _revision, ...rules } = set.json.data.override;
    const back = await post('/thresholds/set', admin, {
      deviceName: 'device_3_reception',
      sensorName: 'CO2',
      rules,
    });
    expect(back.json.data.changed).toBe(false);
  });

  it('refuses rules that do not fit the data point, unknown data points and malformed attributes', async () => {
    const set = (body: Record<string, unknown>) =>
      post('/thresholds/set', admin, { deviceName: HALLWAY, sensorName: 'Temperature', ...body });
    const cases: [Record<string, unknown>, number, string][] = [
      [{ rules: [{ status: 'WARNING', above: 'warm' }] }, 400, 'INVALID_INPUT'],
      [{ rules: [{ status: 'SUNNY', above: 20 }] }, 400, 'INVALID_INPUT'],
      [{ rules: [{ status: 'WARNING', equals: 'open' }] }, 400, 'INVALID_INPUT'],
      [{ rules: { rules: [], hysteresis: -1 } }, 400, 'INVALID_INPUT'],
      [{ rules: { rules: [], stale: { after: 'soon', status: 'WARNING' } } }, 400, 'INVALID_INPUT'],
      [{ rules: { rules: [], extra: 1 } }, 400, 'INVALID_INPUT'],
      [{ rules: 'above 20' }, 400, 'INVALID_ATTRIBUTE'],
      [{ rules: undefined }, 400, 'MISSING_ATTRIBUTE'],
      [{ rules: [], revision: -1 }, 400, 'INVALID_ATTRIBUTE'],
      [{ rules: [], sensorName: 'Pressure' }, 404, 'SENSOR_NOT_FOUND'],
      [{ rules: [], deviceName: 'nope' }, 404, 'DEVICE_NOT_FOUND'],
    ];
    for (const [body, status, code] of cases) {
      const r = await set(body);
      expect([JSON.stringify(body), r.status, r.json.error.code]).toEqual([
        JSON.stringify(body),
        status,
        code,
      ]);
    }
    expect((await rulesOf(HALLWAY, 'Temperature')).override).toBeNull();
  });

  it('clears one override or all of a device’s, each audited with what it was', async () => {
    const device = 'freezer-7';
    for (const sensorName of ['Temperature', 'Humidity', 'Battery'])
      await post('/thresholds/set', admin, {
        deviceName: device,
        sensorName,
        rules: [{ status: 'WARNING', above: 1 }],
      });
    const one = await post('/thresholds/clear', admin, { deviceName: device, sensorName: 'Temperature' });
    expect(one.json.data).toEqual({
      deviceName: device,
      sensorName: 'Temperature',
      cleared: ['Temperature'],
    });
    const [entry] = await audit({ action: 'threshold.clear' });
    expect(entry).toMatchObject({
      action: 'threshold.clear',
      target: `${device}/Temperature`,
      before: { rules: [{ status: 'WARNING', above: 1 }], revision: 1 },
    });
    expect(entry.after).toBeUndefined();
    expect((await rulesOf(device, 'Temperature')).applies).toBe('definition');

    const none = await post('/thresholds/clear', admin, { deviceName: device, sensorName: 'Temperature' });
    expect(none.json.data.cleared).toEqual([]);
    expect(await audit({ action: 'threshold.clear' })).toHaveLength(1);

    const all = await post('/thresholds/clear', admin, { deviceName: device });
    expect(all.json.data).toEqual({ deviceName: device, sensorName: null, cleared: ['Humidity', 'Battery'] });
    expect(
      (await audit({ action: 'threshold.clear' })).map((e: { target: string }) => e.target).sort(),
    ).toEqual([`${device}/Battery`, `${device}/Humidity`, `${device}/Temperature`]);
    const unknown = await post('/thresholds/clear', admin, { deviceName: device, sensorName: 'Pressure' });
    expect([unknown.status, unknown.json.error.code]).toEqual([404, 'SENSOR_NOT_FOUND']);
  });

  it('suppresses until a time or until unsuppressed, refusing a time past or malformed, audited', async () => {
    const until = new Date(Date.now() + 3_600_000).toISOString();
    const timed = await post('/sensors/suppress', admin, {
      deviceName: HALLWAY,
      sensorName: 'Battery',
      untilUTC: until,
    });
    expect(timed.json.data).toEqual({
      deviceName: HALLWAY,
      sensorName: 'Battery',
      suppressed: true,
      untilUTC: until,
    });
    expect((await rulesOf(HALLWAY, 'Battery')).suppression).toEqual({ untilUTC: until });
    const [first] = await audit({ action: 'sensor' });
    expect(first).toMatchObject({
      action: 'sensor.suppress',
      target: `${HALLWAY}/Battery`,
      after: { untilUTC: until },
    });
    expect(first.before).toBeUndefined();

    const open = await post('/sensors/suppress', admin, { deviceName: HALLWAY, sensorName: 'Battery' });
    expect(open.json.data.untilUTC).toBeNull();
    expect((await rulesOf(HALLWAY, 'Battery')).suppression).toEqual({ untilUTC: null });
    const [second] = await audit({ action: 'sensor' });
    expect(second).toMatchObject({ before: { untilUTC: until }, after: { untilUTC: null } });

    const refusals: [Record<string, unknown>, number, string][] = [
      [{ untilUTC: new Date(Date.now() - 60_000).toISOString() }, 400, 'INVALID_INPUT'],
      [{ untilUTC: 'tomorrow' }, 400, 'INVALID_ATTRIBUTE'],
      [{ untilUTC: 1_900_000_000 }, 400, 'INVALID_ATTRIBUTE'],
      [{ sensorName: 'Pressure' }, 404, 'SENSOR_NOT_FOUND'],
      [{ deviceName: 'nope' }, 404, 'DEVICE_NOT_FOUND'],
    ];
    for (const [body, status, code] of refusals) {
      const r = await post('/sensors/suppress', admin, {
        deviceName: HALLWAY,
        sensorName: 'Humidity',
        ...body,
      });
      expect([JSON.stringify(body), r.status, r.json.error.code]).toEqual([
        JSON.stringify(body),
        status,
        code,
      ]);
    }
    expect((await rulesOf(HALLWAY, 'Humidity')).suppression).toBeNull();

    const end = await post('/sensors/unsuppress', admin, { deviceName: HALLWAY, sensorName: 'Battery' });
    expect(end.json.data).toEqual({
      deviceName: HALLWAY,
      sensorName: 'Battery',
      suppressed: false,
      untilUTC: null,
    });
    expect((await rulesOf(HALLWAY, 'Battery')).suppression).toBeNull();
    const [third] = await audit({ action: 'sensor' });
    expect(third).toMatchObject({ action: 'sensor.unsuppress', before: { untilUTC: null } });
    expect(third.after).toBeUndefined();
    // Nothing to end: answered, not audited.
    await post('/sensors/unsuppress', admin, { deviceName: HALLWAY, sensorName: 'Battery' });
    expect(await audit({ action: 'sensor' })).toHaveLength(3);
    // The read API shows it too.
    const details = await call(api, '/sensors/details', {
      token: reader,
      body: { deviceName: HALLWAY, sensorName: 'Battery' },
    });
    expect(details.json.data.suppressed).toBe(false);
  });

  it('answers 403 FORBIDDEN to tokens without scope admin; reading needs only read', async () => {
    const changes: [string, Record<string, unknown>][] = [
      ['/thresholds/set', { deviceName: HALLWAY, sensorName: 'CO2', rules: [] }],
      ['/thresholds/clear', { deviceName: HALLWAY }],
      ['/sensors/suppress', { deviceName: HALLWAY, sensorName: 'CO2' }],
      ['/sensors/unsuppress', { deviceName: HALLWAY, sensorName: 'CO2' }],
    ];
    const before = await post('/thresholds/get', admin, { deviceName: HALLWAY });
    for (const token of [operator, reader]) {
      for (const [path, body] of changes) {
        const r = await post(path, token, body);
        expect([path, r.status, r.json.error.code]).toEqual([path, 403, 'FORBIDDEN']);
      }
      expect((await post('/thresholds/get', token, { deviceName: HALLWAY })).status).toBe(200);
    }
    expect((await post('/thresholds/get', admin, { deviceName: HALLWAY })).json).toEqual(before.json);
  });

  it("never reaches another environment's devices (404, as if they did not exist)", async () => {
    await post('/thresholds/set', admin, {
      deviceName: 'freezer-7',
      sensorName: 'CO2',
      rules: [{ status: 'WARNING', above: 700 }],
    });
    const mine = await post('/thresholds/get', admin, { deviceName: 'freezer-7' });
    const attempts: [string, Record<string, unknown>][] = [
      ['/thresholds/get', { deviceName: 'freezer-7' }],
      ['/thresholds/set', { deviceName: 'freezer-7', sensorName: 'CO2', rules: [] }],
      ['/thresholds/clear', { deviceName: 'freezer-7' }],
      ['/thresholds/clear', { deviceName: 'freezer-7', sensorName: 'CO2' }],
      ['/sensors/suppress', { deviceName: 'freezer-7', sensorName: 'CO2' }],
      ['/sensors/unsuppress', { deviceName: 'freezer-7', sensorName: 'CO2' }],
    ];
    for (const [path, body] of attempts) {
      const r = await post(path, otherAdmin, body);
      expect([path, r.status, r.json.error.code]).toEqual([path, 404, 'DEVICE_NOT_FOUND']);
    }
    expect((await post('/thresholds/get', admin, { deviceName: 'freezer-7' })).json).toEqual(mine.json);
    expect(await audit({}, otherAdmin)).toEqual([]);
  });

  it('reaches the worker: a changed override gives the next values their status, a cleared one ends it', async () => {
    const device = 'device_2_rd_office';
    let value = 26;
    // Each look submits a new value and reads the status of the last one processed: values sent
    // before the worker's catalog (1 s) has the change keep the old rules.
    const statusAfterSubmit = async () => {
      value += 0.01;
      const sent = await call(gateway, `/gateway/submit/${apiKey}`, {
        body: { deviceName: device, Temperature: Number(value.toFixed(2)) },
      });
      expect(sent.status).toBe(202);
      const r = await call(api, '/sensors/details', {
        token: reader,
        body: { deviceName: device, sensorName: 'Temperature' },
      });
      return r.json?.data?.currentStatus as string | undefined;
    };
    await eventually(statusAfterSubmit, {
      until: (s) => s === 'SUCCESS',
      intervalMs: 100,
      message: 'a first value',
    });

    const set = await post('/thresholds/set', admin, {
      deviceName: device,
      sensorName: 'Temperature',
      rules: [{ status: 'WARNING', above: 25 }],
    });
    expect(set.status).toBe(200);
    await eventually(statusAfterSubmit, {
      until: (s) => s === 'WARNING',
      intervalMs: 100,
      message: 'the override applied by the worker',
    });

    await post('/thresholds/clear', admin, { deviceName: device, sensorName: 'Temperature' });
    await eventually(statusAfterSubmit, {
      until: (s) => s === 'SUCCESS',
      intervalMs: 100,
      message: 'the definition’s rules applied again',
    });
  });

  it('keeps the revision inside the stored override, beside the rules the worker reads', async () => {
    await post('/thresholds/set', admin, {
      deviceName: 'device_3_reception',
      sensorName: 'Humidity',
      rules: [{ status: 'WARNING', above: 80 }],
    });
    const stored = await h.redis.hget(h.keys.deviceThresholds('acme', 'device_3_reception'), 'Humidity');
    expect(JSON.parse(stored!)).toEqual({
      rules: [{ status: 'WARNING', above: 80 }],
      hysteresis: 0,
      revision: 1,
    });
  });

  it('describes every operation in the OpenAPI document, POST only', async () => {
    const doc = (await call(api, '/openapi.json')).json;
    for (const path of [
      '/thresholds/get',
      '/thresholds/set',
      '/thresholds/clear',
      '/sensors/suppress',
      '/sensors/unsuppress',
    ]) {
      expect(Object.keys(doc.paths[path])).toEqual(['post']);
      expect(doc.paths[path].post.security).toEqual([{ bearer: [] }]);
    }
    expect(
      doc.paths['/thresholds/set'].post.requestBody.content['application/json'].schema.properties.revision,
    ).toBeDefined();
    const get = await call(api, '/thresholds/get', { token: admin });
    expect([get.status, get.json.error.code]).toEqual([405, 'METHOD_NOT_ALLOWED']);
  });
});
