/**
 * The demo's published credentials (config/provisioning/demo) after `npm run demo` left them in
 * Redis: a plain start (VIGIL_DEMO off) refuses the demo API key on every entry and the demo user's
 * published password on both sign-ins, while the demo (VIGIL_DEMO on) and a demo environment
 * provisioned with secrets of its own keep working.
 */
import { randomBytes } from 'node:crypto';
import mqtt from 'mqtt';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PUBLIC_DEMO } from '../../src/config/public-demo.ts';
import { GATEWAY_KINDS, GATEWAY_PATHS } from '../../src/domain/ingest-item.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil, type RunningVigil } from '../../src/main.ts';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { loadDefinitionFiles, loadParserFile } from '../../src/tenancy/definition-files.ts';
import { applyProvisioning, type AlertingProvisioning } from '../../src/tenancy/provisioning-apply.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

const DEMO_DIR = 'config/provisioning/demo';
const READING = JSON.stringify({ deviceName: 'device_1_hallway', Temperature: 21.5 });
const PUBLISHED_LOGIN = { username: PUBLIC_DEMO.username, password: PUBLIC_DEMO.password };
/** The demo's webhook channel and route are not what these tests are about: they are left out. */
const NO_ALERTING: AlertingProvisioning = { prepare: () => Promise.resolve(() => Promise.resolve([])) };

interface DemoInstall {
  vigil: RunningVigil;
  gateway: string;
  api: string;
  mqttUrl: string;
  /** A key of the demo environment that is not the published one. */
  ownKey: string;
  close(): Promise<void>;
}

/**
 * Vigil (gateway, MQTT, API) with config/provisioning/demo applied as `npm run demo` applies it;
 * `vars` are the provisioning variables (DEMO_API_KEY, DEMO_PASSWORD; none = the published ones).
 */
async function installDemo(demo: boolean, vars: NodeJS.ProcessEnv = {}): Promise<DemoInstall> {
  const config = testConfig({ roles: 'gateway,mqtt,api', demo });
  const redis = connectRedis(config.redisUrl, 'command', 'demo-credentials-test');
  const keys = createKeys(config.keyPrefix);
  const admin = createTenancyAdmin(adminDeps(redis, keys));
  await applyProvisioning(
    DEMO_DIR,
    {
      admin,
      store: createTenancyStore({ redis, keys }),
      loadDefinition: loadDefinitionFiles,
      loadPreparser: loadParserFile,
      alerting: NO_ALERTING,
    },
    vars,
  );
  const { key: ownKey } = await admin.createApiKey(PUBLIC_DEMO.env, 'own');
  const vigil = await startVigil(config, createLogger('silent'));
  return {
    vigil,
    ownKey,
    gateway: `http://127.0.0.1:${vigil.ports.gateway}`,
    api: `http://127.0.0.1:${vigil.ports.api}`,
    mqttUrl: `mqtt://127.0.0.1:${vigil.ports.mqtt}`,
    close: async () => {
      await vigil.close();
      await closeRedis(redis);
    },
  };
}

/** An answer: its status and, when it is JSON, its body. */
interface Answer {
  status: number;
  json: { error?: { code?: string } } | undefined;
}

async function post(url: string, body: string): Promise<Answer> {
  const res = await fetch(url, { method: 'POST', body, headers: { 'content-type': 'application/json' } });
  const text = await res.text();
  return {
    status: res.status,
    json: text.startsWith('{') ? (JSON.parse(text) as Answer['json']) : undefined,
  };
}

/**
 * A reading for the gateway, sent again while the answer is 503 (retryable: a process that has
 * just started may not have its queue connection yet), as a device would.
 */
const submit = (d: DemoInstall, key: string) =>
  eventually(() => post(`${d.gateway}/gateway/submit/${key}`, READING), {
    until: (r) => r.status !== 503,
    message: 'an answer other than 503',
  });

const login = (d: DemoInstall, key: string, body: object) =>
  post(`${d.api}/login/${key}`, JSON.stringify(body));

/** A console sign-in with a fresh anti-forgery token; its status (303 signed in). */
async function consoleSignIn(d: DemoInstall, fields: { env: string; username: string; password: string }) {
  const form = await fetch(`${d.api}/console/sign-in`);
  const cookie = form.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
  const res = await fetch(`${d.api}/console/sign-in`, {
    method: 'POST',
    redirect: 'manual',
    body: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
    headers: { cookie, 'content-type': 'application/x-www-form-urlencoded', origin: d.api },
  });
  return res.status;
}

const mqttConnect = (d: DemoInstall, password: string) =>
  mqtt.connectAsync(d.mqttUrl, { reconnectPeriod: 0, username: 'device', password });

describe("the demo's published credentials in a plain start (VIGIL_DEMO off)", () => {
  let d: DemoInstall;
  beforeAll(async () => {
    d = await installDemo(false);
  });
  afterAll(() => d.close());

  it('answers 401 INVALID_API_KEY to the demo key on every gateway path', async () => {
    for (const kind of GATEWAY_KINDS) {
      const res = await post(`${d.gateway}/${GATEWAY_PATHS[kind]}/${PUBLIC_DEMO.apiKey}`, READING);
      expect([kind, res.status, res.json?.error?.code]).toEqual([kind, 401, 'INVALID_API_KEY']);
    }
    // Another key of the same environment is accepted: only the published one is refused.
    expect((await submit(d, d.ownKey)).status).toBe(202);
  });

  it('refuses an MQTT connection with the demo key: CONNACK 5, not authorized', async () => {
    await expect(mqttConnect(d, PUBLIC_DEMO.apiKey)).rejects.toMatchObject({ code: 5 });
    const own = await mqttConnect(d, d.ownKey);
    await own.endAsync();
  });

  it('refuses the read API login with the demo key, and the demo user’s published password with any key', async () => {
    const byDemoKey = await login(d, PUBLIC_DEMO.apiKey, PUBLISHED_LOGIN);
    expect([byDemoKey.status, byDemoKey.json?.error?.code]).toEqual([401, 'INVALID_API_KEY']);
    const byOwnKey = await login(d, d.ownKey, PUBLISHED_LOGIN);
    expect([byOwnKey.status, byOwnKey.json?.error?.code]).toEqual([401, 'INVALID_CREDENTIALS']);
  });

  it('refuses the demo user’s console sign-in', async () => {
    expect(await consoleSignIn(d, { env: PUBLIC_DEMO.env, ...PUBLISHED_LOGIN })).toBe(401);
  });
});

describe('the demo (VIGIL_DEMO on)', () => {
  let d: DemoInstall;
  beforeAll(async () => {
    d = await installDemo(true);
  });
  afterAll(() => d.close());

  it('accepts the demo key and the demo user', async () => {
    expect((await submit(d, PUBLIC_DEMO.apiKey)).status).toBe(202);
    const client = await mqttConnect(d, PUBLIC_DEMO.apiKey);
    await client.endAsync();
    expect((await login(d, PUBLIC_DEMO.apiKey, PUBLISHED_LOGIN)).status).toBe(200);
    expect(await consoleSignIn(d, { env: PUBLIC_DEMO.env, ...PUBLISHED_LOGIN })).toBe(303);
  });
});

describe('a demo environment with secrets of its own, in a plain start', () => {
  let d: DemoInstall;
  const own = {
    key: `vk_${randomBytes(24).toString('base64url')}`,
    password: randomBytes(12).toString('hex'),
  };
  beforeAll(async () => {
    d = await installDemo(false, { DEMO_API_KEY: own.key, DEMO_PASSWORD: own.password });
  });
  afterAll(() => d.close());

  it('accepts its key and its user', async () => {
    expect((await submit(d, own.key)).status).toBe(202);
    const user = { username: PUBLIC_DEMO.username, password: own.password };
    expect((await login(d, own.key, user)).status).toBe(200);
    expect(await consoleSignIn(d, { env: PUBLIC_DEMO.env, ...user })).toBe(303);
  });
});
