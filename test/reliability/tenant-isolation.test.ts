/**
 * Tenants cannot see or touch each other through a whole running Vigil (gateway, MQTT, worker, read
 * API): environment alpha's API key cannot write beta's devices even by their names, alpha's token
 * gets exactly the 404 a missing thing gets for everything of beta, beta's private definition never
 * shows in any of alpha's answers, error bodies carry no internals, and logins lock per username.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access --
   response bodies are untyped on purpose: the test checks them at run time. */
import { request } from 'node:http';
import mqtt from 'mqtt';
import { describe, expect, it } from 'vitest';
import { COMFORT_PARSER, COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { brokerFor } from '../support/fault-run.ts';
import { provisionComfort, queueIdle, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { readEntry } from '../../src/ingest/ingest-log.ts';

interface Answer {
  status: number;
  text: string;
  body: any; // eslint-disable-line @typescript-eslint/no-explicit-any
}

async function api(p: Pipeline, path: string, token: string, attrs: object = {}): Promise<Answer> {
  const res = await fetch(`${p.apiUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(attrs),
  });
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    // CSV or empty
  }
  return { status: res.status, text, body };
}

/** An error answer in the shared envelope with nothing of the server's insides. */
function expectCleanError(a: Answer): void {
  expect(Object.keys(a.body as object).sort()).toEqual(['error', 'status']);
  expect(a.body.status).toBe('error');
  expect(typeof a.body.error.code).toBe('string');
  expect(typeof a.body.error.message).toBe('string');
  expect(a.text).not.toMatch(/stack|node_modules|\.ts:\d|\/work\/|\bat \w+ \(|Error:/);
}

/**
 * A POST with the path exactly as given (fetch would resolve `..` and re-encode), as an attacker
 * would send it.
 */
async function rawPost(
  base: string,
  path: string,
  headers: Record<string, string>,
  body: string,
): Promise<Answer> {
  const { port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'POST', headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = null;
        try {
          parsed = JSON.parse(text);
        } catch {
          // a bare refusal of Node's HTTP parser (431) has no body
        }
        resolve({ status: res.statusCode ?? 0, text, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Vigil's error envelope, or Node's own bodiless 431 for a request head over its size limit. */
function expectCleanErrorOrBareRefusal(a: Answer): void {
  if (a.status === 431) expect(a.text).toBe('');
  else expectCleanError(a);
}

const SECRET_DEF = 'BetaSecretDefinition';

async function twoTenants(p: Pipeline) {
  const alpha = await provisionComfort(p, 'alpha', ['common']);
  const beta = await provisionComfort(p, 'beta', ['common', 'beta_only']);
  await p.admin.applyDefinition(
    { kind: 'private', env: 'beta' },
    { ...COMFORT_SPEC, name: SECRET_DEF },
    COMFORT_PARSER,
  );
  await p.admin.createDevice('beta', {
    name: 'beta_secret_dev',
    definitionName: SECRET_DEF,
    definitionIsPublic: false,
  });
  const { token: tokenA } = await p.admin.createToken('alpha', 'a', 0);
  const { token: tokenB } = await p.admin.createToken('beta', 'b', 0);
  return { keyA: alpha.key, keyB: beta.key, tokenA, tokenB };
}

describe('tenant isolation', () => {
  it("refuses alpha's key for beta's devices, even with beta's device names, over HTTP and MQTT", async () => {
    const p = await startPipeline({ roles: 'gateway,mqtt,worker,api', mqttEnabled: true });
    const { keyA, keyB } = await twoTenants(p);
    const post = async (key: string, body: object) => {
      const res = await p.post('gateway/submit', key, JSON.stringify(body));
      await res.arrayBuffer();
      expect(res.status).toBe(202);
    };
    await post(keyB, { deviceName: 'beta_only', Temperature: 23 });
    await post(keyB, { deviceName: 'common', Temperature: 22 });
    await eventually(() => queueIdle(p), { timeoutMs: 15_000, message: 'beta processed' });
    await post(keyA, { deviceName: 'beta_only', Temperature: 99 });
    await post(keyA, { deviceName: 'beta_secret_dev', Temperature: 98 });
    await post(keyA, { deviceName: 'common', Temperature: 11 });
    const client = await mqtt.connectAsync(await brokerFor(p), { password: keyA, username: 'x' });
    try {
      await client.publishAsync(
        `gateway/submit/${keyA}`,
        JSON.stringify({ deviceName: 'beta_only', Temperature: 97 }),
        { qos: 1 },
      );
    } finally {
      await client.endAsync();
    }
    await eventually(() => queueIdle(p), { timeoutMs: 15_000, message: 'alpha processed' });
    const temp = (env: string, device: string) =>
      p.redis.hget(p.keys.deviceState(env, device), 'Temperature|v');
    expect(await temp('beta', 'beta_only')).toBe('23');
    expect(await temp('beta', 'common')).toBe('22');
    expect(await temp('beta', 'beta_secret_dev')).toBeNull();
    expect(await temp('alpha', 'common')).toBe('11');
    expect(await p.redis.exists(p.keys.deviceState('alpha', 'beta_only'))).toBe(0);
    const alphaLog = (await p.redis.lrange(p.keys.ingestLog('alpha'), 0, -1)).map(
      (l) => readEntry(l) as { deviceName: string; code: string | null },
    );
    expect(
      alphaLog
        .filter((e) => e.code === 'UNKNOWN_DEVICE')
        .map((e) => e.deviceName)
        .sort(),
    ).toEqual(['beta_only', 'beta_only', 'beta_secret_dev']);
    // Beta's log holds its own two payloads and nothing of alpha's (a check for the text '99'
    // also matched receive times such as ….993Z).
    const betaLog = (await p.redis.lrange(p.keys.ingestLog('beta'), 0, -1)).map(
      (l) => readEntry(l) as { deviceName: string; outcome: string },
    );
    expect(betaLog.map((e) => [e.deviceName, e.outcome]).sort()).toEqual([
      ['beta_only', 'accepted'],
      ['common', 'accepted'],
    ]);
  });

  it("answers alpha's token for everything of beta exactly as for things that do not exist", async () => {
    const p = await startPipeline({ roles: 'gateway,worker,api' });
    const { keyB, tokenA } = await twoTenants(p);
    for (const device of ['beta_only', 'beta_secret_dev', 'common']) {
      const res = await p.post(
        'gateway/submit',
        keyB,
        JSON.stringify({ deviceName: device, Temperature: 23 }),
      );
      await res.arrayBuffer();
    }
    await eventually(() => queueIdle(p), { timeoutMs: 15_000, message: 'beta processed' });
    const now = Math.floor(Date.now() / 1000);
    const asks = (device: string, sensor = 'Temperature'): [string, object][] => [
      ['/sensors/list', { deviceName: device }],
      ['/sensors/details', { deviceName: device, sensorName: sensor }],
      ['/sensors/batchList', { devices: [device] }],
      ['/sensors/batchDetails', { sensors: [{ deviceName: device, sensorName: sensor }] }],
      ['/sensors/export', { deviceName: device, sensorName: sensor, startUTC: now - 3600, endUTC: now + 60 }],
      ['/devices/events', { deviceName: device }],
    ];
    const errors: Answer[] = [];
    for (const device of ['beta_only', 'beta_secret_dev']) {
      const foreign = asks(device);
      const missing = asks('no_such_device');
      for (const [i, [path, attrs]] of foreign.entries()) {
        const a = await api(p, path, tokenA, attrs);
        const m = await api(p, missing[i]![0], tokenA, missing[i]![1]);
        expect(a.status, path).toBe(404);
        expect(a.text.replaceAll(device, 'X'), path).toBe(m.text.replaceAll('no_such_device', 'X'));
        errors.push(a);
      }
    }
    const def = await api(p, '/devices/listByDefinitionName', tokenA, {
      definitionName: SECRET_DEF,
      definitionIsPublic: false,
    });
    const noDef = await api(p, '/devices/listByDefinitionName', tokenA, {
      definitionName: 'NoSuchDef',
      definitionIsPublic: false,
    });
    expect(def.status).toBe(noDef.status);
    expect(def.text.replaceAll(SECRET_DEF, 'X')).toBe(noDef.text.replaceAll('NoSuchDef', 'X'));
    const publicTry = await api(p, '/devices/listByDefinitionName', tokenA, {
      definitionName: SECRET_DEF,
      definitionIsPublic: true,
    });
    expect(publicTry.status).toBe(noDef.status);
    errors.push(def, publicTry);
    for (const e of errors) expectCleanError(e);

    // Nothing of beta in any of alpha's listings or in the API description.
    const listings = [
      await api(p, '/devices/list', tokenA),
      await api(p, '/events/list', tokenA),
      await api(p, '/ingest/log', tokenA),
      await api(p, '/sensors/list', tokenA, { deviceName: 'common' }),
      { status: 200, text: await (await fetch(`${p.apiUrl}/openapi.json`)).text(), body: null },
    ];
    for (const l of listings) {
      expect(l.status).toBe(200);
      expect(l.text).not.toMatch(/beta_only|beta_secret_dev|BetaSecretDefinition/);
    }
  });

  it('refuses unknown paths, path tricks and bad tokens with clean error bodies', async () => {
    const p = await startPipeline({ roles: 'gateway,worker,api' });
    const { keyA, tokenA } = await twoTenants(p);
    const long = 'k'.repeat(20_000);
    const gatewayTricks = [
      `gateway/submit/..%2F${keyA}`,
      `gateway/submit/${keyA}%2F..%2Fx`,
      `gateway/submit/../submit/${keyA}`,
      `gateway/submit/${keyA}/extra`,
      `gateway/submit/%2e%2e`,
      `gateway/submit/${long}`,
      `raw/${keyA}?deviceName=..%2F..%2Fbeta%2Fbeta_only`,
      `raw/${keyA}?deviceName=beta_only`,
      `raw/${keyA}?deviceName=${'d'.repeat(5000)}`,
    ];
    for (const path of gatewayTricks) {
      const a = await rawPost(p.gatewayUrl, `/${path}`, {}, '{"deviceName":"common"}');
      expect(a.status, path).toBeLessThan(500);
      // A raw payload may be accepted (its device name is refused later, in the ingestion log).
      if (a.status !== 202) expectCleanErrorOrBareRefusal(a);
    }
    await eventually(() => queueIdle(p), { timeoutMs: 15_000, message: 'tricks processed' });
    expect(await p.redis.exists(p.keys.deviceState('beta', 'beta_only'))).toBe(0);
    const apiTricks: [string, Record<string, string>][] = [
      ['/devices/list', { authorization: `Bearer ${tokenA}x` }],
      ['/devices/list', { authorization: `Bearer ${long}` }],
      ['/devices/list', { authorization: `Basic ${tokenA}` }],
      ['/devices/list', { authorization: `Bearer ${tokenA}`, 'x-env': 'beta' }],
      ['/devices/../devices/list', {}],
      ['/devices%2Flist', { authorization: `Bearer ${tokenA}` }],
      ['/sensors/list?deviceName=..%2F..%2Fbeta%2Fbeta_only', { authorization: `Bearer ${tokenA}` }],
      [`/sensors/list?deviceName=${'x'.repeat(6000)}`, { authorization: `Bearer ${tokenA}` }],
      [`/login/${long}`, {}],
      ['/%', {}],
    ];
    for (const [path, headers] of apiTricks) {
      const a = await rawPost(p.apiUrl, path, headers, '{}');
      expect(a.status, path).toBeLessThan(500);
      if (a.status >= 400) expectCleanErrorOrBareRefusal(a);
      else {
        expect(a.text).not.toMatch(/beta_only/);
      }
    }
  });

  it('locks a username after 5 failed logins, in its own environment only', async () => {
    const p = await startPipeline({ roles: 'api' });
    const { keyA, keyB } = await twoTenants(p);
    await p.admin.createUser('alpha', 'ann', 'correct-horse-1');
    await p.admin.createUser('beta', 'ann', 'correct-horse-2');
    const login = async (key: string, password: string) => {
      const res = await fetch(`${p.apiUrl}/login/${key}`, {
        method: 'POST',
        body: JSON.stringify({ username: 'ann', password }),
      });
      return {
        status: res.status,
        retryAfter: res.headers.get('retry-after'),
        body: (await res.json()) as Answer['body'], // eslint-disable-line @typescript-eslint/no-unsafe-assignment
      };
    };
    for (let i = 0; i < 5; i++) {
      const r = await login(keyA, `wrong-${i}-password`);
      expect(r.status).toBe(401);
      expect(r.body.error.code).toBe('INVALID_CREDENTIALS');
    }
    const locked = await login(keyA, 'correct-horse-1');
    expect(locked.status).toBe(429);
    expect(locked.body.error.code).toBe('LOGIN_LOCKED');
    expect(Number(locked.retryAfter)).toBeGreaterThan(0);
    const otherEnv = await login(keyB, 'correct-horse-2');
    expect(otherEnv.status).toBe(200);
    expect(otherEnv.body.data.token).toMatch(/^vt_/);
    // beta's token works for beta only.
    expect((await api(p, '/devices/list', otherEnv.body.data.token as string)).text).toContain('beta_only');
  });
});
