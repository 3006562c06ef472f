/**
 * The management API's pre-parser operations on the roles `startVigil` serves: each operation's
 * success, a syntax error by its code and place, 403 for tokens without the scope, 404 where there
 * is none and across environments, 409 on a stale revision, the audit entry of each change (which
 * names the source by its size and SHA-256, never its text), and a worker running a new source
 * after the old one was removed.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   response bodies are untyped on purpose: these tests check them at run time. */
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { call, type ApiHarness } from './api-harness.ts';
import { startManagementHarness } from './management-harness.ts';

/** A pre-parser that sends every submission to `device` with Temperature `value`. */
const preparser = (device: string, value: number) =>
  `function parsePayload(payloadStr) {\n  return { deviceName: ${JSON.stringify(device)}, payload: { Temperature: ${value} } };\n}\n`;
const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

describe('management API: the pre-parser', () => {
  let h: ApiHarness;
  let api: string;
  let gateway: string;
  let otherKey: string;
  let admin: string;
  let operator: string;
  let reader: string;
  let otherAdmin: string;

  beforeAll(async () => {
    const m = await startManagementHarness({ roles: 'gateway,worker,api' });
    ({ h, api } = m);
    ({ admin, operator, reader, otherAdmin } = m.tokens);
    gateway = m.gateway;
    otherKey = m.otherApiKey;
    return () => m.close();
  });

  const post = (path: string, token: string, body: unknown = {}) =>
    call(api, path, { token, body, contentType: 'application/json' });
  const audit = async (token = admin) =>
    (await post('/audit/list', token, { action: 'preparser' })).json.data.entries;

  it('answers 404 PREPARSER_NOT_FOUND while there is none', async () => {
    for (const path of ['/preparser/get', '/preparser/enable', '/preparser/disable', '/preparser/remove']) {
      const r = await post(path, admin);
      expect([path, r.status, r.json.error.code]).toEqual([path, 404, 'PREPARSER_NOT_FOUND']);
    }
    expect(await audit()).toEqual([]);
  });

  it('sets a source, disabled when new; audits its size and SHA-256, not its text', async () => {
    const source = preparser('device_1_hallway', 1);
    const r = await post('/preparser/set', admin, { source });
    expect(r.status).toBe(200);
    expect(r.json.data).toEqual({ enabled: false, revision: 1, changed: true });
    const got = await post('/preparser/get', admin);
    expect(got.json.data).toEqual({ source, enabled: false, revision: 1 });
    const [entry] = await audit();
    expect(entry).toMatchObject({
      actor: 'token:automation',
      action: 'preparser.set',
      target: 'preparser',
      after: {
        revision: 1,
        enabled: false,
        sourceBytes: Buffer.byteLength(source),
        sourceSha256: sha256(source),
      },
    });
    expect(entry.before).toBeUndefined();
    expect(JSON.stringify(entry)).not.toContain('parsePayload');

    // The same source again changes nothing.
    const same = await post('/preparser/set', admin, { source });
    expect(same.json.data).toEqual({ enabled: false, revision: 1, changed: false });
    expect(await audit()).toHaveLength(1);
  });

  it('refuses a source that does not compile, with the place in the message and details', async () => {
    const broken = await post('/preparser/set', admin, {
      source: 'function parsePayload(s) {\n  return [;\n}\n',
    });
    expect([broken.status, broken.json.error.code]).toEqual([400, 'INVALID_INPUT']);
    expect(broken.json.error).toMatchObject({ attribute: 'source', line: 2, column: expect.any(Number) });
    expect(broken.json.error.message).toMatch(/preparser\.js:2:\d+/);
    const noFunction = await post('/preparser/set', admin, { source: 'const x = 1;' });
    expect([noFunction.status, noFunction.json.error.code]).toEqual([400, 'INVALID_INPUT']);
    const cases: [Record<string, unknown>, string][] = [
      [{ source: '' }, 'MISSING_ATTRIBUTE'],
      [{}, 'MISSING_ATTRIBUTE'],
      [{ source: 42 }, 'INVALID_ATTRIBUTE'],
      [{ source: preparser('x', 1), enabled: 'yes' }, 'INVALID_ATTRIBUTE'],
      [{ source: preparser('x', 1), revision: 'one' }, 'INVALID_ATTRIBUTE'],
      [{ source: preparser('x', 1), sauce: 1 }, 'INVALID_ATTRIBUTE'],
    ];
    for (const [body, code] of cases) {
      const r = await post('/preparser/set', admin, body);
      expect([JSON.stringify(body), r.status, r.json.error.code]).toEqual([JSON.stringify(body), 400, code]);
    }
    expect((await post('/preparser/get', admin)).json.data.revision).toBe(1);
  });

  it('enables and disables it without a new revision, each audited once', async () => {
    const on = await post('/preparser/enable', admin);
    expect(on.json.data).toEqual({ enabled: true, revision: 1, changed: true });
    const again = await post('/preparser/enable', admin);
    expect(again.json.data.changed).toBe(false);
    const [entry] = await audit();
    expect(entry).toMatchObject({
      action: 'preparser.enable',
      before: { enabled: false, revision: 1 },
      after: { enabled: true, revision: 1 },
    });
    expect(await audit()).toHaveLength(2);
    const off = await post('/preparser/disable', admin);
    expect(off.json.data).toEqual({ enabled: false, revision: 1, changed: true });
    expect((await audit())[0]).toMatchObject({ action: 'preparser.disable', after: { enabled: false } });
    expect((await post('/preparser/get', admin)).json.data.enabled).toBe(false);
  });

  it('changes the source based on a revision, and refuses a stale one with 409 CONFLICT', async () => {
    const source = preparser('device_1_hallway', 2);
    const r = await post('/preparser/set', admin, { source, enabled: true, revision: 1 });
    expect(r.json.data).toEqual({ enabled: true, revision: 2, changed: true });
    expect((await audit())[0]).toMatchObject({
      action: 'preparser.set',
      before: { revision: 1, enabled: false },
      after: { revision: 2, enabled: true, sourceSha256: sha256(source) },
    });
    const stale = await post('/preparser/set', admin, {
      source: preparser('device_1_hallway', 3),
      revision: 1,
    });
    expect([stale.status, stale.json.error.code, stale.json.error.revision]).toEqual([409, 'CONFLICT', 2]);
    const notNew = await post('/preparser/set', admin, { source, revision: 0 });
    expect([notNew.status, notNew.json.error.code]).toEqual([409, 'CONFLICT']);
    expect((await post('/preparser/get', admin)).json.data).toEqual({ source, enabled: true, revision: 2 });
  });

  it('answers 403 FORBIDDEN without scope admin; reading it needs scope write', async () => {
    const before = (await post('/preparser/get', admin)).json;
    for (const token of [operator, reader]) {
      for (const path of ['/preparser/set', '/preparser/enable', '/preparser/disable', '/preparser/remove']) {
        const r = await post(path, token, path === '/preparser/set' ? { source: preparser('x', 9) } : {});
        expect([path, r.status, r.json.error.code]).toEqual([path, 403, 'FORBIDDEN']);
      }
    }
    expect((await post('/preparser/get', operator)).json).toEqual(before);
    const read = await post('/preparser/get', reader);
    expect([read.status, read.json.error.code]).toEqual([403, 'FORBIDDEN']);
    expect((await post('/preparser/get', admin)).json).toEqual(before);
  });

  it("never reaches another environment's pre-parser", async () => {
    const mine = (await post('/preparser/get', admin)).json;
    const theirs = await post('/preparser/get', otherAdmin);
    expect([theirs.status, theirs.json.error.code]).toEqual([404, 'PREPARSER_NOT_FOUND']);
    for (const path of ['/preparser/enable', '/preparser/disable', '/preparser/remove']) {
      const r = await post(path, otherAdmin);
      expect([path, r.status, r.json.error.code]).toEqual([path, 404, 'PREPARSER_NOT_FOUND']);
    }
    // Setting one of its own, based on acme's revision, is refused: there is none in "other".
    const based = await post('/preparser/set', otherAdmin, { source: preparser('x', 1), revision: 2 });
    expect([based.status, based.json.error.code]).toEqual([409, 'CONFLICT']);
    expect(await audit(otherAdmin)).toEqual([]);
    expect((await post('/preparser/get', admin)).json).toEqual(mine);
  });

  it('removes it, audited; the next source counts its revision on', async () => {
    const removed = await post('/preparser/remove', admin);
    expect(removed.json.data).toEqual({ removed: true, revision: 2 });
    const [entry] = await audit();
    expect(entry).toMatchObject({ action: 'preparser.remove', before: { revision: 2, enabled: true } });
    expect(entry.after).toBeUndefined();
    const gone = await post('/preparser/get', admin);
    expect([gone.status, gone.json.error.code]).toEqual([404, 'PREPARSER_NOT_FOUND']);
    expect((await post('/preparser/remove', admin)).json.error.code).toBe('PREPARSER_NOT_FOUND');
    const stale = await post('/preparser/set', admin, { source: preparser('x', 1), revision: 2 });
    expect([stale.status, stale.json.error.code, stale.json.error.revision]).toEqual([409, 'CONFLICT', 0]);
    const next = await post('/preparser/set', admin, { source: preparser('x', 1), revision: 0 });
    expect(next.json.data).toEqual({ enabled: false, revision: 3, changed: true });
  });

  it('reaches the worker: a source set after the removal of the one it ran is the one it runs', async () => {
    // In "other", whose pre-parser the worker has not run yet: it runs revision 1, which is then
    // removed. Workers cache compiled code by revision, so the next source must not be revision 1
    // again, or a worker would go on running the removed code.
    const token = (await h.admin.createToken('other', 'reads', 0, ['read'])).token;
    const valueAfterSubmit = async () => {
      // Refused (409 NO_PREPARSER) while the gateway's cache still knows of none: then look again.
      await call(gateway, `/preparserfirst/${otherKey}`, { body: {} });
      const r = await call(api, '/sensors/details', {
        token,
        body: { deviceName: 'device_1_hallway', sensorName: 'Temperature' },
      });
      return r.json?.data?.rawValue as number | null | undefined;
    };
    const first = await post('/preparser/set', otherAdmin, { source: preparser('device_1_hallway', 1) });
    expect(first.json.data.revision).toBe(1);
    await eventually(valueAfterSubmit, { until: (v) => v === 1, intervalMs: 100, message: 'revision 1 run' });

    await post('/preparser/remove', otherAdmin);
    const next = await post('/preparser/set', otherAdmin, { source: preparser('device_1_hallway', 5) });
    expect(next.json.data.revision).toBe(2);
    await eventually(valueAfterSubmit, {
      until: (v) => v === 5,
      intervalMs: 100,
      message: 'the new source run',
    });
  });

  it('describes every operation in the OpenAPI document, POST only', async () => {
    const doc = (await call(api, '/openapi.json')).json;
    for (const path of [
      '/preparser/get',
      '/preparser/set',
      '/preparser/enable',
      '/preparser/disable',
      '/preparser/remove',
    ]) {
      expect(Object.keys(doc.paths[path])).toEqual(['post']);
      expect(doc.paths[path].post.security).toEqual([{ bearer: [] }]);
    }
    expect(
      doc.paths['/preparser/set'].post.requestBody.content['application/json'].schema.properties.source,
    ).toBeDefined();
  });
});
