/**
 * The management API's device operations on the api role that `startVigil` serves: each
 * operation's success, a validation error by its code, 403 for tokens without scope admin, 404
 * across environments, 409 on a stale revision, 405 for GET, and the audit entry of each change.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   response bodies are untyped on purpose: these tests check them at run time. */
import { beforeAll, describe, expect, it } from 'vitest';
import { call } from './api-harness.ts';
import { startManagementHarness } from './management-harness.ts';

describe('management API: devices', () => {
  let api: string;
  let admin: string;
  let operator: string;
  let reader: string;
  let otherAdmin: string;

  beforeAll(async () => {
    const m = await startManagementHarness();
    ({ api } = m);
    ({ admin, operator, reader, otherAdmin } = m.tokens);
    return () => m.close();
  });

  const post = (path: string, token: string, body: unknown) =>
    call(api, path, { token, body, contentType: 'application/json' });
  const audit = async (env = 'acme') =>
    (await post('/audit/list', env === 'acme' ? admin : otherAdmin, {})).json.data.entries;

  it('creates a device with labels and answers it with its revision, audited', async () => {
    const r = await post('/devices/create', admin, {
      deviceName: 'freezer-7',
      displayName: 'Freezer 7',
      definitionName: 'ComfortSensors',
      definitionIsPublic: false,
      labels: { site: 'amsterdam', customer: 'acme' },
      availabilityMinutes: 15,
    });
    expect(r.status).toBe(200);
    expect(r.json.data).toEqual({
      deviceName: 'freezer-7',
      displayName: 'Freezer 7',
      definitionIsPublic: false,
      definitionName: 'ComfortSensors',
      lastContactUTC: null,
      labels: { site: 'amsterdam', customer: 'acme' },
      availabilityMinutes: 15,
      revision: 1,
      createdUTC: expect.stringMatching(/Z$/),
    });
    const [entry] = await audit();
    expect(entry).toMatchObject({
      actor: 'token:automation',
      action: 'device.create',
      target: 'freezer-7',
      after: { deviceName: 'freezer-7', labels: { site: 'amsterdam', customer: 'acme' }, revision: 1 },
    });
    expect(entry.before).toBeUndefined();
    // The read API lists it like every other device.
    const listed = await call(api, '/devices/list', { token: reader });
    expect(listed.json.data.map((d: { deviceName: string }) => d.deviceName)).toContain('freezer-7');
  });

  it('refuses a duplicate name (409 ALREADY_EXISTS), a bad name or label (400 INVALID_INPUT), an unknown definition (404)', async () => {
    const base = { definitionName: 'ComfortSensors', definitionIsPublic: false };
    const dup = await post('/devices/create', admin, { ...base, deviceName: 'device_1_hallway' });
    expect([dup.status, dup.json.error.code]).toEqual([409, 'ALREADY_EXISTS']);
    const badName = await post('/devices/create', admin, { ...base, deviceName: 'no/slash' });
    expect([badName.status, badName.json.error.code]).toEqual([400, 'INVALID_INPUT']);
    const badLabel = await post('/devices/create', admin, {
      ...base,
      deviceName: 'x1',
      labels: { '9site': 'a' },
    });
    expect([badLabel.status, badLabel.json.error.code]).toEqual([400, 'INVALID_INPUT']);
    const missing = await post('/devices/create', admin, { deviceName: 'x2', definitionIsPublic: false });
    expect([missing.status, missing.json.error.code, missing.json.error.attribute]).toEqual([
      400,
      'MISSING_ATTRIBUTE',
      'definitionName',
    ]);
    const unknownAttr = await post('/devices/create', admin, {
      ...base,
      deviceName: 'x3',
      dispalyName: 'typo',
    });
    expect([unknownAttr.status, unknownAttr.json.error.code, unknownAttr.json.error.attribute]).toEqual([
      400,
      'INVALID_ATTRIBUTE',
      'dispalyName',
    ]);
    const noDef = await post('/devices/create', admin, { ...base, deviceName: 'x4', definitionName: 'Nope' });
    expect([noDef.status, noDef.json.error.code]).toEqual([404, 'DEFINITION_NOT_FOUND']);
    const listed = await post('/devices/get', admin, { deviceName: 'x1' });
    expect(listed.json.error.code).toBe('DEVICE_NOT_FOUND');
  });

  it('updates with the revision it was read at, and refuses a stale one with 409 CONFLICT', async () => {
    const read = await post('/devices/get', admin, { deviceName: 'device_2_rd_office' });
    const revision = read.json.data.revision as number;
    const first = await post('/devices/update', admin, {
      deviceName: 'device_2_rd_office',
      displayName: 'R&D, first floor',
      labels: { site: 'delft' },
      revision,
    });
    expect(first.status).toBe(200);
    expect(first.json.data).toMatchObject({
      displayName: 'R&D, first floor',
      labels: { site: 'delft' },
      revision: revision + 1,
    });
    const stale = await post('/devices/update', admin, {
      deviceName: 'device_2_rd_office',
      displayName: 'R&D, second floor',
      revision,
    });
    expect([stale.status, stale.json.error.code, stale.json.error.revision]).toEqual([
      409,
      'CONFLICT',
      revision + 1,
    ]);
    // Without a revision the last writer wins.
    const blind = await post('/devices/update', admin, {
      deviceName: 'device_2_rd_office',
      availabilityMinutes: 5,
    });
    expect(blind.json.data).toMatchObject({
      displayName: 'R&D, first floor',
      availabilityMinutes: 5,
      revision: revision + 2,
    });
    const inherit = await post('/devices/update', admin, {
      deviceName: 'device_2_rd_office',
      availabilityMinutes: null,
    });
    expect(inherit.json.data.availabilityMinutes).toBeNull();
    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'device.update',
      target: 'device_2_rd_office',
      before: { availabilityMinutes: 5 },
      after: { availabilityMinutes: null },
    });
  });

  it('deletes a device, audited with what it was', async () => {
    const r = await post('/devices/delete', admin, { deviceName: 'device_3_reception' });
    expect(r.json.data).toEqual({ deviceName: 'device_3_reception', deleted: true });
    const again = await post('/devices/delete', admin, { deviceName: 'device_3_reception' });
    expect([again.status, again.json.error.code]).toEqual([404, 'DEVICE_NOT_FOUND']);
    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'device.delete',
      target: 'device_3_reception',
      before: { deviceName: 'device_3_reception' },
    });
    expect(entry.after).toBeUndefined();
  });

  it('answers 403 FORBIDDEN to tokens without scope admin, and 405 to GET', async () => {
    for (const token of [operator, reader]) {
      for (const path of ['/devices/create', '/devices/update', '/devices/delete', '/audit/list']) {
        const r = await post(path, token, { deviceName: 'device_1_hallway' });
        expect([path, r.status, r.json.error.code]).toEqual([path, 403, 'FORBIDDEN']);
      }
    }
    const get = await call(api, '/devices/create', { token: admin });
    expect([get.status, get.json.error.code]).toEqual([405, 'METHOD_NOT_ALLOWED']);
    const none = await call(api, '/devices/create', { body: {} });
    expect([none.status, none.json.error.code]).toEqual([401, 'UNAUTHORIZED']);
  });

  it("never reaches another environment's devices (404, as if they did not exist)", async () => {
    const r = await post('/devices/update', otherAdmin, { deviceName: 'freezer-7', displayName: 'mine' });
    expect([r.status, r.json.error.code]).toEqual([404, 'DEVICE_NOT_FOUND']);
    const del = await post('/devices/delete', otherAdmin, { deviceName: 'freezer-7' });
    expect(del.json.error.code).toBe('DEVICE_NOT_FOUND');
    expect((await post('/devices/get', admin, { deviceName: 'freezer-7' })).json.data.displayName).toBe(
      'Freezer 7',
    );
    expect(await audit('other')).toEqual([]);
  });

  it('describes every operation in the OpenAPI document, POST only', async () => {
    const doc = (await call(api, '/openapi.json')).json;
    for (const path of [
      '/devices/create',
      '/devices/get',
      '/devices/update',
      '/devices/delete',
      '/audit/list',
    ]) {
      expect(Object.keys(doc.paths[path])).toEqual(['post']);
      expect(doc.paths[path].post.security).toEqual([{ bearer: [] }]);
    }
    expect(doc.paths['/devices/delete'].post.responses['403']).toBeDefined();
    expect(
      doc.paths['/devices/update'].post.requestBody.content['application/json'].schema.properties.revision,
    ).toBeDefined();
  });
});
