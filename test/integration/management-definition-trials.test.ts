/**
 * /definitions/run and /definitions/replay through the management API, on the api role that
 * `startVigil` serves: a stored version, another version and a draft run on a payload (with a
 * device's overrides, and a parser's error with its line), refusals by their code, and a draft
 * replayed over many devices' recent payloads beside the published version — each class of the diff
 * shown by a draft that makes it (a parser that now throws, one that now parses what failed, a
 * threshold change, a conversion change). A replay of 2,000 payloads runs off the API's event loop:
 * a cheap request sent after it started is answered before it ends. Recent payloads are written in
 * the layout the worker writes (recent-payload-codec.ts), so that each test controls them exactly.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-argument --
   response bodies are untyped on purpose: these tests check them at run time. */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { beforeAll, describe, expect, it } from 'vitest';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { encodeRecentPayload } from '../../src/recent-payloads/recent-payload-codec.ts';
import { call, startApiHarness, type ApiHarness } from './api-harness.ts';

const ADMIN = ['read', 'write', 'admin'] as const;

const yaml = (above: number, dataType = 'temperature') => `name: Freezer
manufacturer: Acme
version: "2"
dataPoints:
  - name: Temperature
    dataType: ${dataType}
    thresholds:
      - { status: WARNING, above: ${above} }
`;
const SPEC: DefinitionSpec = {
  name: 'Freezer',
  manufacturer: 'Acme',
  version: '2',
  dataPoints: [
    {
      name: 'Temperature',
      displayName: 'Temperature',
      dataType: 'temperature',
      hysteresis: 0,
      thresholds: [{ status: 'WARNING', above: 25 }],
    },
  ],
};
/** The published parser: JSON with `t`. */
const PUBLISHED = `function parsePayload(s) {
  const j = JSON.parse(s);
  return { Temperature: j.t };
}
`;
/** Throws on line 3 for a reading above 30. */
const THROWS_ABOVE_30 = `function parsePayload(s) {
  const j = JSON.parse(s);
  if (j.t > 30) throw new Error('sensor fault at ' + j.t);
  return { Temperature: j.t };
}
`;
/** Also reads `t=21` text, which the published parser cannot. */
const READS_TEXT = `function parsePayload(s) {
  if (s.startsWith('t=')) return { Temperature: Number(s.slice(2)) };
  return { Temperature: JSON.parse(s).t };
}
`;
/** Rounds to whole degrees: another converted value, the same status. */
const ROUNDS = `function parsePayload(s) {
  return { Temperature: Math.round(JSON.parse(s).t) };
}
`;
/** Spins a while on every payload (~a millisecond): a replay of 2,000 takes seconds of parser time. */
const SPINS = `function parsePayload(s) {
  let x = 0;
  for (let i = 0; i < 300000; i++) x += i % 7;
  return { Temperature: JSON.parse(s).t + (x < 0 ? 1 : 0) };
}
`;

/** Each device's payloads, oldest first: the classes each draft below tells apart. */
const READINGS = ['{"t":10}', '{"t":21.4}', '{"t":22}', '{"t":31}', 't=21'];

describe('management API: running and replaying definitions', () => {
  let h: ApiHarness;
  let api: string;
  let admin: string;
  let operator: string;
  let reader: string;
  let otherOperator: string;
  const cleanups: (() => unknown)[] = [];

  /** Writes `payloads` as `device`'s recent payloads (oldest first), as the worker keeps them. */
  async function keep(env: string, device: string, payloads: readonly string[]): Promise<void> {
    const key = h.keys.recentPayloads(env, device);
    const now = Date.now();
    const entries = payloads.map((payload, i) =>
      encodeRecentPayload(
        {
          item: {
            id: `${device}-${i}`,
            env,
            gateway: 'submit',
            via: 'http',
            receivedMs: now - (payloads.length - i) * 1000,
            body: payload,
            bodyIsHex: false,
            client: 'test',
          },
          payload,
          outcome: undefined,
          statuses: undefined,
        },
        64 * 1024,
      ),
    );
    await h.redis.del(key);
    // Newest first, as the worker's LPUSH leaves them.
    await h.redis.lpush(key, ...entries);
  }

  beforeAll(async () => {
    h = await startApiHarness(
      {
        roles: 'api',
        workbenchRunsPerMinutePerSession: 100_000,
        workbenchRunsPerMinutePerEnv: 100_000,
        // A spinning parser's call is well within it on a loaded machine.
        sandboxTimeoutMs: 1000,
      },
      (fn) => cleanups.push(fn),
    );
    await h.seedEnvironment('acme');
    await h.seedEnvironment('other');
    await h.admin.applyDefinition({ kind: 'private', env: 'acme' }, SPEC, PUBLISHED);
    for (const d of ['f1', 'f2', 'f3']) {
      await h.admin.createDevice('acme', {
        name: d,
        displayName: d,
        definitionName: 'Freezer',
        definitionIsPublic: false,
      });
      await keep('acme', d, READINGS);
    }
    admin = (await h.admin.createToken('acme', 'automation', 0, [...ADMIN])).token;
    operator = (await h.admin.createToken('acme', 'ops', 0, ['read', 'write'])).token;
    reader = (await h.admin.createToken('acme', 'reader', 0, ['read'])).token;
    otherOperator = (await h.admin.createToken('other', 'ops', 0, ['read', 'write'])).token;
    const vigil = await startVigil(h.config, createLogger('silent'));
    cleanups.push(() => vigil.close());
    api = `http://127.0.0.1:${vigil.ports.api}`;
    return async () => {
      for (const fn of cleanups.reverse()) await fn();
    };
  });

  const post = (path: string, body: unknown, token = operator) =>
    call(api, path, { token, body, contentType: 'application/json' });
  const replay = (definition: string, parserSource: string, more: Record<string, unknown> = {}) =>
    post('/definitions/replay', { definitionName: 'Freezer', definition, parserSource, ...more });

  it('runs the published version, another version and a draft on a payload, auditing nothing', async () => {
    const audited = async () => (await post('/audit/list', {}, admin)).json.data.entries.length as number;
    const before = await audited();
    const published = await post('/definitions/run', { definitionName: 'Freezer', payload: '{"t":26}' });
    expect(published.status).toBe(200);
    expect(published.json.data).toMatchObject({ ok: true, logs: [], unknownKeys: [] });
    expect(published.json.data.dataPoints).toEqual([
      expect.objectContaining({
        sensorName: 'Temperature',
        parsed: 26,
        rawValue: 26,
        currentValue: '26.0 °C',
        currentStatus: 'WARNING',
      }),
    ]);
    // A second version, kept as a draft, run by its number: tenfold, warning above 20.
    await post('/definitions/apply', { definition: yaml(20), parserSource: ROUNDS, publish: false }, admin);
    const v2 = await post('/definitions/run', {
      definitionName: 'Freezer',
      version: 2,
      payload: '{"t":20.6}',
    });
    expect(v2.json.data.dataPoints[0]).toMatchObject({ rawValue: 21, currentStatus: 'WARNING' });
    // A draft, YAML and parser, stored nowhere; console.log shows in the report.
    const draft = await post('/definitions/run', {
      definition: yaml(40, 'number'),
      parserSource:
        'function parsePayload(s) { console.log("got", s); return { Temperature: 1.5, Extra: 2 }; }',
      payload: '{}',
    });
    expect(draft.json.data).toMatchObject({ ok: true, logs: ['got {}'], unknownKeys: ['Extra'] });
    expect(draft.json.data.dataPoints[0]).toMatchObject({ currentValue: '1.5', currentStatus: 'SUCCESS' });
    // Only the parser is a draft: the stored version's data points and rules.
    const parserOnly = await post('/definitions/run', {
      definitionName: 'Freezer',
      parserSource: THROWS_ABOVE_30,
      payload: '{"t":35}',
    });
    expect(parserOnly.json.data).toMatchObject({
      ok: false,
      code: 'PARSER_ERROR',
      filename: 'Freezer.js',
      line: 3,
    });
    expect(parserOnly.json.data.message).toContain('sensor fault at 35');
    // Runs change nothing: the only entry is the version applied.
    expect(await audited()).toBe(before + 1);
  });

  it("gives a device's threshold overrides their statuses", async () => {
    await h.admin.setThreshold('acme', 'f2', 'Temperature', [{ status: 'CRITICAL', above: 20 }]);
    const r = await post('/definitions/run', {
      definitionName: 'Freezer',
      payload: '{"t":22}',
      deviceName: 'f2',
    });
    expect(r.json.data.dataPoints[0]).toMatchObject({ currentStatus: 'CRITICAL' });
    const none = await post('/definitions/run', { definitionName: 'Freezer', payload: '{"t":22}' });
    expect(none.json.data.dataPoints[0]).toMatchObject({ currentStatus: 'SUCCESS' });
    await h.admin.clearThreshold('acme', 'f2', 'Temperature');
  });

  it('refuses by code: a broken draft, missing and unknown things, other scopes and environments', async () => {
    const badParser = await post('/definitions/run', {
      definitionName: 'Freezer',
      parserSource: 'function parsePayload(s) {\n  return { a: 1 ;\n}',
      payload: '{}',
    });
    expect([
      badParser.status,
      badParser.json.error.code,
      badParser.json.error.part,
      badParser.json.error.line,
    ]).toEqual([400, 'INVALID_INPUT', 'parser', 2]);
    const badYaml = await replay(yaml(25).replace('dataType: temperature', 'dataType: temp'), PUBLISHED);
    expect([badYaml.json.error.code, badYaml.json.error.part, badYaml.json.error.line]).toEqual([
      'INVALID_INPUT',
      'definition',
      6,
    ]);
    const otherName = await replay(yaml(25).replace('name: Freezer', 'name: Fridge'), PUBLISHED);
    expect([otherName.status, otherName.json.error.code]).toEqual([400, 'INVALID_INPUT']);
    const nothing = await post('/definitions/run', { payload: '{}' });
    expect([nothing.status, nothing.json.error.code]).toEqual([400, 'MISSING_ATTRIBUTE']);
    const noPayload = await post('/definitions/run', { definitionName: 'Freezer' });
    expect([noPayload.json.error.code, noPayload.json.error.attribute]).toEqual([
      'MISSING_ATTRIBUTE',
      'payload',
    ]);
    const noVersion = await post('/definitions/run', {
      definitionName: 'Freezer',
      version: 9,
      payload: '{}',
    });
    expect([noVersion.status, noVersion.json.error.code]).toEqual([404, 'VERSION_NOT_FOUND']);
    const noDevice = await post('/definitions/run', {
      definitionName: 'Freezer',
      payload: '{}',
      deviceName: 'nope',
    });
    expect([noDevice.status, noDevice.json.error.code]).toEqual([404, 'DEVICE_NOT_FOUND']);
    for (const [path, body] of [
      ['/definitions/run', { definitionName: 'Freezer', payload: '{}' }],
      ['/definitions/replay', { definitionName: 'Freezer', definition: yaml(25), parserSource: PUBLISHED }],
    ] as const) {
      const read = await post(path, body, reader);
      expect([read.status, read.json.error.code]).toEqual([403, 'FORBIDDEN']);
      const elsewhere = await post(path, body, otherOperator);
      expect([elsewhere.status, elsewhere.json.error.code]).toEqual([404, 'DEFINITION_NOT_FOUND']);
    }
  });

  it('replays: a parser that now throws on some payloads makes them fail', async () => {
    const r = await replay(yaml(25), THROWS_ABOVE_30);
    expect(r.status).toBe(200);
    const d = r.json.data;
    expect(d).toMatchObject({ definitionName: 'Freezer', published: 1, devices: 3, devicesReplayed: 3 });
    expect([d.available, d.replayed, d.skipped]).toEqual([15, 15, 0]);
    // t=31 throws now; t=21 text failed then and fails now (the same).
    expect(d.counts).toEqual({ fails: 3, succeeds: 0, status: 0, value: 0, same: 12 });
    const failed = d.rows.filter((row: { verdict: string }) => row.verdict === 'fails');
    expect(failed.map((row: { payload: string }) => row.payload)).toEqual([
      '{"t":31}',
      '{"t":31}',
      '{"t":31}',
    ]);
    expect(failed[0].then).toEqual({
      ok: true,
      dataPoints: { Temperature: { value: 31, currentValue: '31.0 °C', status: 'WARNING' } },
    });
    expect(failed[0].now).toMatchObject({ ok: false, code: 'PARSER_ERROR', line: 3 });
    // The rows that differ come first.
    expect(d.rows.slice(0, 3).map((row: { verdict: string }) => row.verdict)).toEqual([
      'fails',
      'fails',
      'fails',
    ]);
  });

  it('replays: a parser that now reads what failed makes it succeed', async () => {
    const d = (await replay(yaml(25), READS_TEXT)).json.data;
    expect(d.counts).toEqual({ fails: 0, succeeds: 3, status: 0, value: 0, same: 12 });
    const row = d.rows[0];
    expect([row.verdict, row.payload, row.then.ok, row.then.code]).toEqual([
      'succeeds',
      't=21',
      false,
      'PARSER_ERROR',
    ]);
    expect(row.now.dataPoints.Temperature).toEqual({ value: 21, currentValue: '21.0 °C', status: 'SUCCESS' });
  });

  it('replays: a threshold change changes a status', async () => {
    const d = (await replay(yaml(21), PUBLISHED)).json.data;
    // 21.4 and 22 go from SUCCESS to WARNING; 31 was WARNING already.
    expect(d.counts).toEqual({ fails: 0, succeeds: 0, status: 6, value: 0, same: 9 });
    const row = d.rows.find((x: { payload: string }) => x.payload === '{"t":22}');
    expect(row.changes).toEqual([
      {
        sensorName: 'Temperature',
        then: { value: 22, currentValue: '22.0 °C', status: 'SUCCESS' },
        now: { value: 22, currentValue: '22.0 °C', status: 'WARNING' },
      },
    ]);
  });

  it('replays: a conversion change changes a value', async () => {
    const d = (await replay(yaml(25), ROUNDS)).json.data;
    // 21.4 becomes 21 (still SUCCESS); 10, 22 and 31 are whole already.
    expect(d.counts).toEqual({ fails: 0, succeeds: 0, status: 0, value: 3, same: 12 });
    expect(d.rows[0].changes).toEqual([
      {
        sensorName: 'Temperature',
        then: { value: 21.4, currentValue: '21.4 °C', status: 'SUCCESS' },
        now: { value: 21, currentValue: '21.0 °C', status: 'SUCCESS' },
      },
    ]);
    // Another data type formats the same value another way.
    const typed = (await replay(yaml(25, 'number'), PUBLISHED)).json.data;
    expect(typed.counts.value).toBe(12);
  });

  it('bounds a replay and samples it across devices', async () => {
    const d = (await replay(yaml(25), PUBLISHED, { limit: 6 })).json.data;
    expect([d.replayed, d.devicesReplayed]).toEqual([6, 3]);
    const perDevice = new Map<string, number>();
    for (const row of d.rows) perDevice.set(row.deviceName, (perDevice.get(row.deviceName) ?? 0) + 1);
    expect([...perDevice.values()]).toEqual([2, 2, 2]);
    // A device's two are its oldest and its newest.
    expect(
      d.rows
        .filter((row: { deviceName: string }) => row.deviceName === 'f1')
        .map((row: { payload: string }) => row.payload)
        .sort(),
    ).toEqual(['t=21', '{"t":10}'].sort());
    const tooMany = await replay(yaml(25), PUBLISHED, { limit: 2001 });
    expect([tooMany.status, tooMany.json.error.code]).toEqual([400, 'INVALID_ATTRIBUTE']);
  });

  it(
    'replays 2,000 payloads of 100 devices off the event loop: another request is answered meanwhile',
    { timeout: 120_000 },
    async () => {
      const devices = Array.from({ length: 100 }, (_, i) => `bulk_${String(i).padStart(3, '0')}`);
      for (const d of devices) {
        await h.admin.createDevice('acme', {
          name: d,
          displayName: d,
          definitionName: 'Freezer',
          definitionIsPublic: false,
        });
        await keep(
          'acme',
          d,
          Array.from({ length: 20 }, (_, i) => `{"t":${(i % 40) - 5}}`),
        );
      }
      const delay = monitorEventLoopDelay({ resolution: 5 });
      delay.enable();
      const startedMs = performance.now();
      let replayEndedMs: number | undefined;
      const running = replay(yaml(25), SPINS, { limit: 2000 }).then((r) => {
        replayEndedMs = performance.now();
        return r;
      });
      // A cheap request sent after the replay started: answered while it still runs.
      const listStartedMs = performance.now();
      const list = await post('/devices/list', {});
      const listAnsweredMs = performance.now();
      expect(list.status).toBe(200);
      expect(replayEndedMs).toBeUndefined();
      const r = await running;
      delay.disable();
      expect(r.status).toBe(200);
      expect(r.json.data.replayed).toBe(2000);
      expect(r.json.data.devicesReplayed).toBe(103);
      const figures = {
        replayMs: Math.round((replayEndedMs ?? 0) - startedMs),
        devicesListMs: Math.round(listAnsweredMs - listStartedMs),
        eventLoopDelayMaxMs: Math.round(delay.max / 1e6),
        eventLoopDelayP99Ms: Math.round(delay.percentile(99) / 1e6),
      };
      // The measurement, for the record (docs/management.md quotes it).
      process.stdout.write(`replay of 2,000 payloads: ${JSON.stringify(figures)}\n`);
    },
  );
});

describe('management API: trial limits', () => {
  it('counts runs per token and per environment: 429 RATE_LIMITED with Retry-After', async () => {
    const h = await startApiHarness({
      roles: 'api',
      workbenchRunsPerMinutePerSession: 3,
      workbenchRunsPerMinutePerEnv: 5,
      deviceRecentPayloads: 3,
    });
    await h.seedEnvironment('acme');
    const vigil = await startVigil(h.config, createLogger('silent'));
    const cleanup = () => vigil.close();
    try {
      const api = `http://127.0.0.1:${vigil.ports.api}`;
      const [one, two] = [
        (await h.admin.createToken('acme', 'one', 0, ['read', 'write'])).token,
        (await h.admin.createToken('acme', 'two', 0, ['read', 'write'])).token,
      ];
      const run = (token: string) =>
        call(api, '/definitions/run', {
          token,
          body: { definitionName: 'ComfortSensors', payload: '{"Temperature":20}' },
          contentType: 'application/json',
        });
      for (let i = 0; i < 3; i++) expect((await run(one)).status).toBe(200);
      const perToken = await run(one);
      expect([perToken.status, perToken.json.error.code]).toEqual([429, 'RATE_LIMITED']);
      expect(Number(perToken.headers.get('retry-after'))).toBeGreaterThan(0);
      // The environment has 2 of its 5 left: another token gets those, then 429.
      for (let i = 0; i < 2; i++) expect((await run(two)).status).toBe(200);
      const perEnv = await run(two);
      expect([perEnv.status, perEnv.json.error.code]).toEqual([429, 'RATE_LIMITED']);
    } finally {
      await cleanup();
    }
  });
});
