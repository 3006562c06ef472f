/**
 * Definitions with versions through the management API, on the api role and a worker that
 * `startVigil` runs: versions made, kept as drafts, published and rolled back with their revision,
 * refused by code when wrong; and a payload accepted after a publication's answer processed by the
 * published version — with a catalog cache far longer than the test, so it is the epoch, not the
 * cache's expiry, that tells the worker.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   response bodies are untyped on purpose: these tests check them at run time. */
import { beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { eventually } from '../support/eventually.ts';
import { call, startApiHarness, type ApiHarness } from './api-harness.ts';

const ADMIN = ['read', 'write', 'admin'] as const;
const yaml = (above: number) => `name: Freezer
manufacturer: Acme
version: "2"
dataPoints:
  - name: Temperature
    dataType: temperature
    thresholds:
      - { status: WARNING, above: ${above} }
`;
const PARSER = (factor: number) =>
  `function parsePayload(s) { const j = JSON.parse(s); return { Temperature: j.t * ${factor} }; }`;

describe('management API: definitions and their versions', () => {
  let h: ApiHarness;
  let api: string;
  let gateway: string;
  let admin: string;
  let operator: string;
  let apiKey: string;
  const cleanups: (() => unknown)[] = [];

  beforeAll(async () => {
    h = await startApiHarness({ roles: 'gateway,worker,api', catalogCacheMs: 600_000 }, (fn) =>
      cleanups.push(fn),
    );
    ({ apiKey } = await h.seedEnvironment('acme'));
    await h.seedEnvironment('other');
    admin = (await h.admin.createToken('acme', 'automation', 0, [...ADMIN])).token;
    operator = (await h.admin.createToken('acme', 'ops', 0, ['read', 'write'])).token;
    const vigil = await startVigil(h.config, createLogger('silent'));
    cleanups.push(() => vigil.close());
    api = `http://127.0.0.1:${vigil.ports.api}`;
    gateway = `http://127.0.0.1:${vigil.ports.gateway}`;
    return async () => {
      for (const fn of cleanups.reverse()) await fn();
    };
  });

  const post = (path: string, body: unknown, token = admin) =>
    call(api, path, { token, body, contentType: 'application/json' });

  it('makes versions, keeps a draft, publishes and rolls back with the revision, each audited', async () => {
    const first = await post('/definitions/apply', {
      definition: yaml(25),
      parserSource: PARSER(1),
      note: 'first',
    });
    expect(first.json.data).toEqual({
      definitionName: 'Freezer',
      version: 1,
      published: 1,
      revision: 1,
      created: true,
      changed: true,
    });
    const same = await post('/definitions/apply', { definition: yaml(25), parserSource: PARSER(1) });
    expect(same.json.data).toMatchObject({ version: 1, created: false, changed: false, revision: 1 });
    const draft = await post('/definitions/apply', {
      definition: yaml(20),
      parserSource: PARSER(10),
      publish: false,
      note: 'tenfold',
      revision: 1,
    });
    expect(draft.json.data).toMatchObject({ version: 2, published: 1, revision: 2, created: true });
    const stale = await post('/definitions/publish', { definitionName: 'Freezer', version: 2, revision: 1 });
    expect([stale.status, stale.json.error.code, stale.json.error.revision]).toEqual([409, 'CONFLICT', 2]);

    const versions = await post('/definitions/versions', {
      definitionName: 'Freezer',
      definitionIsPublic: false,
    });
    expect(
      versions.json.data.map(
        (v: { version: number; published: boolean; note: string; createdBy: string }) => [
          v.version,
          v.published,
          v.note,
          v.createdBy,
        ],
      ),
    ).toEqual([
      [2, false, 'tenfold', 'token:automation'],
      [1, true, 'first', 'token:automation'],
    ]);
    const shown = await post('/definitions/get', {
      definitionName: 'Freezer',
      definitionIsPublic: false,
      version: 2,
    });
    expect(shown.json.data).toMatchObject({ version: 2, published: 1, latest: 2, parserSource: PARSER(10) });
    expect(shown.json.data.definition).toContain('above: 20');

    const published = await post('/definitions/publish', {
      definitionName: 'Freezer',
      version: 2,
      revision: 2,
    });
    expect(published.json.data).toMatchObject({ previous: 1, published: 2, revision: 3, changed: true });
    const notEarlier = await post('/definitions/rollback', { definitionName: 'Freezer', version: 2 });
    expect([notEarlier.status, notEarlier.json.error.code]).toEqual([400, 'INVALID_INPUT']);
    const back = await post('/definitions/rollback', {
      definitionName: 'Freezer',
      version: 1,
      note: 'too hot',
    });
    expect(back.json.data).toMatchObject({ previous: 2, published: 1 });
    const missing = await post('/definitions/publish', { definitionName: 'Freezer', version: 9 });
    expect([missing.status, missing.json.error.code]).toEqual([404, 'VERSION_NOT_FOUND']);

    const audit = (await post('/audit/list', { action: 'definition' })).json.data.entries;
    expect(
      audit.map(
        (e: {
          action: string;
          before?: { version: number | null };
          after?: { version: number };
          definitionVersion?: number;
        }) => [e.action, e.before?.version ?? null, e.after?.version ?? null],
      ),
    ).toEqual([
      ['definition.rollback', 2, 1],
      ['definition.publish', 1, 2],
      ['definition.version', null, 2],
      ['definition.publish', null, 1],
      ['definition.create', null, 1],
    ]);
  });

  it('refuses a definition with a problem by its code, naming where it is', async () => {
    const badType = await post('/definitions/apply', {
      definition: yaml(25).replace('dataType: temperature', 'dataType: temp'),
      parserSource: PARSER(1),
    });
    expect([
      badType.status,
      badType.json.error.code,
      badType.json.error.part,
      badType.json.error.line,
    ]).toEqual([400, 'INVALID_INPUT', 'definition', 6]);
    const badParser = await post('/definitions/apply', {
      definition: yaml(25),
      parserSource: 'function parsePayload(s) {\n  return { a: 1 ;\n}',
    });
    expect([badParser.json.error.code, badParser.json.error.part, badParser.json.error.line]).toEqual([
      'INVALID_INPUT',
      'parser',
      2,
    ]);
    const check = await post(
      '/definitions/check',
      { definition: 'name: [', parserSource: 'nonsense(' },
      operator,
    );
    expect(check.json.data.ok).toBe(false);
    expect(check.json.data.problems.map((p: { part: string; code: string }) => [p.part, p.code])).toEqual([
      ['definition', 'INVALID_INPUT'],
      ['parser', 'PARSER_ERROR'],
    ]);
  });

  it('answers 403 to a token without scope admin, and keeps environments apart', async () => {
    const r = await post('/definitions/publish', { definitionName: 'Freezer', version: 2 }, operator);
    expect([r.status, r.json.error.code]).toEqual([403, 'FORBIDDEN']);
    const otherAdmin = (await h.admin.createToken('other', 'a', 0, [...ADMIN])).token;
    const other = await post(
      '/definitions/get',
      { definitionName: 'Freezer', definitionIsPublic: false },
      otherAdmin,
    );
    expect([other.status, other.json.error.code]).toEqual([404, 'DEFINITION_NOT_FOUND']);
  });

  it('processes a payload accepted after a publication with the published version, in the running worker', async () => {
    const moved = await post('/devices/update', {
      deviceName: 'device_1_hallway',
      definitionName: 'Freezer',
      definitionIsPublic: false,
    });
    expect(moved.status).toBe(200);
    const submit = (t: number) =>
      call(gateway, `/gateway/submit/${apiKey}`, { body: { deviceName: 'device_1_hallway', t } });
    const temperature = async () =>
      (await call(api, '/sensors/list', { token: operator, body: { deviceName: 'device_1_hallway' } })).json
        .data?.[0]?.rawValue;
    // Version 1 (published by the rollback) multiplies by 1.
    expect((await submit(2)).status).toBe(202);
    await eventually(temperature, { until: (v) => v === 2, message: 'the value of version 1' });
    let lastId = '';
    for (const [version, t, expected] of [
      [2, 3, 30],
      [1, 4, 4],
      [2, 5, 50],
    ] as const) {
      const r = await post('/definitions/publish', { definitionName: 'Freezer', version });
      expect(r.json.data.published).toBe(version);
      const accepted = await submit(t);
      expect(accepted.status).toBe(202);
      lastId = accepted.json.data.id;
      await eventually(temperature, {
        until: (v) => v === expected || v === t,
        message: `the value of version ${version}`,
      });
      expect(await temperature()).toBe(expected);
    }
    // The ingestion log is written with the step's acknowledgement, after its state: wait for it.
    const log = (
      await eventually(() => call(api, '/ingest/log', { token: operator }), {
        until: (r) => r.json?.data?.[0]?.ingestId === lastId,
        message: 'the four submissions in the ingestion log',
      })
    ).json.data;
    expect(
      log
        .slice(0, 4)
        .map(
          (e: {
            action: string;
            before?: { version: number | null };
            after?: { version: number };
            definitionVersion?: number;
          }) => e.definitionVersion,
        ),
    ).toEqual([2, 1, 2, 1]);
  });
});
