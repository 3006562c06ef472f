/**
 * The console's parser workbench over real HTTP, against a whole Vigil (gateway, worker, API with
 * the console): each environment's runs go to an isolate of its own, only operators run parsers
 * and only admins change definitions (the server refuses the others whatever the page shows), the
 * editor's check route wants the session's token and the console's origin, and runs are limited
 * per session and per environment, a replay counting one run per payload.
 */
import { describe, expect, it } from 'vitest';
import { COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { eventually } from '../support/eventually.ts';
import { provisionComfort, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { listRecentPayloads } from '../../src/recent-payloads/list-recent-payloads.ts';
import { consoleClient, formToken, signIn, type ConsoleClient } from './console-client.ts';
import { ttsUplink } from '../../scripts/lib/network-messages.ts';

const PASSWORD = 'correct horse battery';
const COMFORT_PAGE = '/console/definitions/private/ComfortSensors';

/** Fills its environment's heap on every run, keeping what it got, and answers normally. */
const FILLS_HEAP =
  'var hoard = []; function parsePayload(s) {' +
  ' try { for (;;) hoard.push(new Float64Array(131072)); } catch (e) {}' +
  ' return { Temperature: hoard.length }; }';

/** A signed-in client of `username` (created with `role`) in `env`. */
async function user(p: Pipeline, env: string, username: string, role: 'operator' | 'viewer' = 'operator') {
  await p.admin.createUser(env, username, PASSWORD, role);
  const c = consoleClient(p.apiUrl);
  await signIn(c, env, username, PASSWORD);
  return c;
}

interface WorkbenchAnswer {
  status: number;
  retryAfter: string | null;
  html: string;
  /** The code of the page's error notice, if any. */
  errorCode: string | undefined;
  /** The code of the run's failure, if it failed. */
  runCode: string | undefined;
}

/** Presses Run (or Replay) on a definition's page, as the form does. */
async function press(
  c: ConsoleClient,
  page: string,
  fields: { action: 'run' | 'replay'; payload?: string; device?: string },
): Promise<WorkbenchAnswer> {
  const token = await formToken(await c.get(page));
  const res = await c.post(page, { _csrf: token, payload: '', device: '', ...fields });
  const html = await res.text();
  return {
    status: res.status,
    retryAfter: res.headers.get('retry-after'),
    html,
    errorCode: /class="notice notice-error"[^>]*><span class="mono code">([A-Z_]+)<\/span>/.exec(html)?.[1],
    runCode: /id="run-result">\s*<h3>The parser failed<\/h3>\s*<p><span class="mono code">([A-Z_]+)</.exec(
      html,
    )?.[1],
  };
}

const run = (c: ConsoleClient, page: string, payload: string) => press(c, page, { action: 'run', payload });

/** The current value a successful run shows for `sensor`. */
const shownValue = (html: string, sensor: string) =>
  new RegExp(`data-sensor="${sensor}">[\\s\\S]*?data-label="Current value" class="value">([^<]*)<`).exec(
    html,
  )?.[1];

describe('console parser workbench', () => {
  it("runs one environment's parser after another environment's run filled its heap", async () => {
    const p = await startPipeline({ roles: 'api', sandboxTimeoutMs: 1000 });
    await provisionComfort(p, 'evil', []);
    await p.admin.applyDefinition(
      { kind: 'private', env: 'evil' },
      { ...COMFORT_SPEC, name: 'Hoard' },
      FILLS_HEAP,
    );
    await provisionComfort(p, 'victim', []);
    const eve = await user(p, 'evil', 'eve');
    const vic = await user(p, 'victim', 'vic');

    const evil = await run(eve, '/console/definitions/private/Hoard', '{}');
    expect([evil.status, evil.runCode]).toEqual([200, undefined]);
    const victim = await run(vic, COMFORT_PAGE, JSON.stringify({ Temperature: 21.5 }));
    expect([victim.status, victim.runCode]).toEqual([200, undefined]);
    expect(shownValue(victim.html, 'Temperature')).toBe('21.5 °C');
  });

  it('refuses Run and Replay to a viewer (403 FORBIDDEN) and shows a viewer neither button', async () => {
    const p = await startPipeline({ roles: 'api' });
    await provisionComfort(p, 'acme', ['d1']);
    const viewer = await user(p, 'acme', 'val', 'viewer');
    const operator = await user(p, 'acme', 'olga');

    const viewerPage = await (await viewer.get(`${COMFORT_PAGE}?device=d1`)).text();
    expect(viewerPage).not.toMatch(/name="action" value="(run|replay)"/);
    for (const fields of [
      { action: 'run', payload: '{}' },
      { action: 'replay', device: 'd1' },
    ] as const) {
      const refused = await press(viewer, COMFORT_PAGE, fields);
      expect([refused.status, refused.errorCode]).toEqual([403, 'FORBIDDEN']);
    }
    const operatorPage = await (await operator.get(`${COMFORT_PAGE}?device=d1`)).text();
    expect(operatorPage).toMatch(/name="action" value="run"/);
    expect(operatorPage).toMatch(/name="action" value="replay"/);
    expect((await run(operator, COMFORT_PAGE, '{"Temperature":20}')).status).toBe(200);
  });

  it('limits runs per session and per environment with 429 RATE_LIMITED and Retry-After', async () => {
    const p = await startPipeline({
      roles: 'api',
      workbenchRunsPerMinutePerSession: 3,
      workbenchRunsPerMinutePerEnv: 5,
      // The limits may not be below the recent payloads a replay runs at once.
      deviceRecentPayloads: 3,
    });
    await provisionComfort(p, 'acme', []);
    await provisionComfort(p, 'other', []);
    const [first, second, elsewhere] = [
      await user(p, 'acme', 'ann'),
      await user(p, 'acme', 'bob'),
      await user(p, 'other', 'cid'),
    ];
    const payload = '{"Temperature":20}';
    for (let i = 0; i < 3; i++) expect((await run(first, COMFORT_PAGE, payload)).status).toBe(200);
    const perSession = await run(first, COMFORT_PAGE, payload);
    expect([perSession.status, perSession.errorCode]).toEqual([429, 'RATE_LIMITED']);
    expect(Number(perSession.retryAfter)).toBeGreaterThan(0);
    // The environment has 2 of its 5 left: another session of it gets those, then 429.
    for (let i = 0; i < 2; i++) expect((await run(second, COMFORT_PAGE, payload)).status).toBe(200);
    const perEnv = await run(second, COMFORT_PAGE, payload);
    expect([perEnv.status, perEnv.errorCode]).toEqual([429, 'RATE_LIMITED']);
    expect(Number(perEnv.retryAfter)).toBeGreaterThan(0);
    // Another environment's limits are its own.
    expect((await run(elsewhere, COMFORT_PAGE, payload)).status).toBe(200);
  });

  it('counts a replay of N recent payloads as N runs', { timeout: 60_000 }, async () => {
    const p = await startPipeline({
      roles: 'gateway,worker,api',
      workbenchRunsPerMinutePerSession: 5,
      deviceRecentPayloads: 5,
    });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    for (let i = 0; i < 3; i++) {
      const res = await p.post(
        'gateway/submit',
        key,
        JSON.stringify({ deviceName: 'd1', Temperature: 20 + i }),
      );
      expect(res.status).toBe(202);
    }
    await eventually(() => listRecentPayloads(p.redis, p.keys, 'acme', 'd1'), {
      until: (recent) => recent.length === 3,
      message: "d1's recent payloads kept",
    });
    const ann = await user(p, 'acme', 'ann');

    const replay = await press(ann, COMFORT_PAGE, { action: 'replay', device: 'd1' });
    expect(replay.status).toBe(200);
    expect(replay.html).toContain('Replay of 3 recent payloads');
    // 3 of 5 used: a second replay of 3 does not fit, 2 runs do, a third does not.
    const again = await press(ann, COMFORT_PAGE, { action: 'replay', device: 'd1' });
    expect([again.status, again.errorCode]).toEqual([429, 'RATE_LIMITED']);
    for (let i = 0; i < 2; i++) expect((await run(ann, COMFORT_PAGE, '{"Temperature":20}')).status).toBe(200);
    const over = await run(ann, COMFORT_PAGE, '{"Temperature":20}');
    expect([over.status, over.errorCode]).toEqual([429, 'RATE_LIMITED']);
  });
  it("refuses an operator's Save, Publish and Roll back, and checks the editor's check route like a form", async () => {
    const p = await startPipeline({ roles: 'api' });
    await provisionComfort(p, 'acme', ['d1']);
    const operator = await user(p, 'acme', 'olga');
    const page = await (await operator.get(COMFORT_PAGE)).text();
    expect(page).not.toMatch(/value="(save|publish|rollback)"/);
    const token = /name="_csrf" value="([^"]+)"/.exec(page)?.[1] ?? '';
    for (const action of ['save', 'publish', 'rollback']) {
      const res = await operator.post(COMFORT_PAGE, { _csrf: token, action, version: '1', note: '' });
      const html = await res.text();
      expect([res.status, /<span class="mono code">([A-Z_]+)<\/span>/.exec(html)?.[1]]).toEqual([
        403,
        'FORBIDDEN',
      ]);
    }
    const check = (headers: Record<string, string>, body: unknown) =>
      fetch(`${p.apiUrl}${COMFORT_PAGE}/check`, {
        method: 'POST',
        headers: {
          cookie: [...operator.jar].map(([k, v]) => `${k}=${v}`).join('; '),
          'content-type': 'application/json',
          ...headers,
        },
        body: JSON.stringify(body),
      });
    const draft = { definition: 'name: [', parserSource: 'function parsePayload(s) {\n  return {;\n}' };
    const ok = await check({ 'x-csrf-token': token }, draft);
    const answer = (await ok.json()) as {
      data: { ok: boolean; problems: { part: string; line: number | null }[] };
    };
    expect([ok.status, answer.data.ok]).toEqual([200, false]);
    expect(answer.data.problems.map((x) => [x.part, x.line])).toEqual([
      ['definition', 1],
      ['parser', 2],
    ]);
    for (const headers of [
      {},
      { 'x-csrf-token': 'forged' },
      { 'x-csrf-token': token, 'sec-fetch-site': 'cross-site' },
    ] as Record<string, string>[]) {
      const refused = await check(headers, draft);
      expect([refused.status, ((await refused.json()) as { error: { code: string } }).error.code]).toEqual([
        403,
        'CSRF_REJECTED',
      ]);
    }
  });

  it("tries a device codec on a recent uplink as the network server's whole message", async () => {
    const p = await startPipeline({ roles: 'gateway,worker,api' });
    await p.admin.createEnvironment('farm', 'en');
    const point = (name: string, extra: object) => ({
      name,
      displayName: name,
      dataType: 'number' as const,
      hysteresis: 0,
      thresholds: [],
      ...extra,
    });
    await p.admin.applyDefinition(
      { kind: 'private', env: 'farm' },
      {
        name: 'Probe',
        manufacturer: 'Acme',
        version: '1',
        parserFormat: 'ts013',
        dataPoints: [point('Moisture', { source: 'soil.moisture' }), point('Signal', { radio: 'rssi' })],
      },
      'function decodeUplink(input) { return input.fPort === 5 ? { data: { soil: { moisture: input.bytes[0] } } } : { errors: ["port " + input.fPort] }; }',
    );
    await p.admin.createDevice('farm', {
      name: 'probe-1',
      definitionName: 'Probe',
      definitionIsPublic: false,
    });
    const { key } = await p.admin.createApiKey('farm', 'tts');
    const message = ttsUplink({
      deviceId: 'probe-1',
      devEui: '00000000000000b1',
      bytes: [37],
      fPort: 5,
      receivedAt: new Date().toISOString(),
      gateways: [{ rssi: -88, snr: 4 }],
    });
    expect((await p.post('tts', key, JSON.stringify(message))).status).toBe(202);
    await eventually(() => listRecentPayloads(p.redis, p.keys, 'farm', 'probe-1'), {
      until: (recent) => recent.length === 1,
    });
    await p.admin.createUser('farm', 'ada', PASSWORD, 'operator');
    const c = consoleClient(p.apiUrl);
    await signIn(c, 'farm', 'ada', PASSWORD);
    const page = '/console/definitions/private/Probe';
    const shown = await (await c.get(`${page}?device=probe-1`)).text();
    const loaded = /<textarea id="wb-payload"[^>]*>([^<]*)</.exec(shown)?.[1] ?? '';
    expect(loaded).toContain('end_device_ids');
    const answer = await press(c, page, {
      action: 'run',
      device: 'probe-1',
      payload: loaded.replaceAll('&quot;', '"'),
    });
    expect(answer.runCode).toBeUndefined();
    expect(shownValue(answer.html, 'Moisture')).toBe('37');
    expect(shownValue(answer.html, 'Signal')).toBe('-88');
    // Bytes written in hex, with their port: no radio metadata then.
    const hex = await run(c, page, '5:2a');
    expect(shownValue(hex.html, 'Moisture')).toBe('42');
    expect((await run(c, page, '2a')).runCode).toBe('PARSER_CODEC_ERRORS');
  });
});
