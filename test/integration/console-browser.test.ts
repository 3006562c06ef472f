/**
 * The web console in a real browser (Debian's Chromium driven by playwright-core) against a whole
 * running Vigil on real Redis and InfluxDB: sign-in with MFA, wrong password, lockout, sign-out; the
 * fleet; a payload appearing on an open device page; the chart; acknowledging an alarm (and a
 * viewer refused); the parser workbench (a failing
 * line marked, converted values, replay); the ingestion log's parser failure; hostile text shown as
 * text; one environment seeing nothing of another; cross-site requests refused; cookie flags and CSP.
 * Screenshots go to docs/images/ with VIGIL_UPDATE_SCREENSHOTS=1 (elsewhere to a temporary folder).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Secret, TOTP } from 'otpauth';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { createInfluxClient } from '../../src/history/influx-client.ts';
import { queryRecentValues } from '../../src/history/recent-values.ts';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil, type RunningVigil } from '../../src/main.ts';
import { closeRedis, connectRedis, type Redis } from '../../src/redis/connect.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import {
  BATCH_PREPARSER,
  COLD_ROOM_PARSER,
  COLD_ROOM_SPEC,
  coldRoomDay,
} from '../fixtures/definitions/cold-room.ts';
import { COMFORT_PARSER, COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { canvasPixels, launchChromium } from '../support/browser.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

const PASSWORD = 'correct horse battery';
const HOSTILE = '<img src=x onerror=alert(1)>';
const SHOTS =
  process.env.VIGIL_UPDATE_SCREENSHOTS === '1'
    ? join(import.meta.dirname, '..', '..', 'docs', 'images')
    : mkdtempSync(join(tmpdir(), 'vigil-shots-'));

/** A parser that fails on line 3 when the payload says so. */
const PROBE_PARSER = `function parsePayload(payloadStr) {
  const j = JSON.parse(payloadStr);
  if (j.fail) throw new Error('cannot read ' + j.fail);
  return { Temperature: j.Temperature };
}
`;
const PROBE_SPEC: DefinitionSpec = {
  name: 'Probe',
  manufacturer: 'Test',
  version: '1',
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

let vigil: RunningVigil;
let redis: Redis;
let browser: Browser;
let base: string;
let gateway: string;
let keyA: string;
let keyB: string;
let mfaSecret: string;
const admin = () => createTenancyAdmin(adminDeps(redis, createKeys(vigil.config.keyPrefix)));

/** Waits until what `read` gives passes `check` (its expect), as eventually() waits. */
async function until<T>(read: () => Promise<T>, check: (value: T) => void): Promise<void> {
  await eventually(
    async () => {
      check(await read());
      return true;
    },
    { message: 'the page to show it' },
  );
}

async function submit(key: string, body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${gateway}/gateway/submit/${key}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  expect(res.status).toBe(202);
}

/** Waits until the environment's ingestion log holds `count` entries. */
async function processed(env: string, count: number): Promise<void> {
  const keys = createKeys(vigil.config.keyPrefix);
  await eventually(async () => (await redis.llen(keys.ingestLog(env))) >= count, {
    message: `${count} ingestion log entries of ${env}`,
  });
}

/** Waits until the worker has written `count` recent payloads of `device` (a moment after its step). */
async function kept(env: string, device: string, count: number): Promise<void> {
  const keys = createKeys(vigil.config.keyPrefix);
  await eventually(async () => (await redis.llen(keys.recentPayloads(env, device))) >= count, {
    message: `${count} recent payloads of ${env}/${device}`,
  });
}

async function signIn(
  context: BrowserContext,
  env: string,
  username: string,
  o: { password?: string; code?: string } = {},
): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${base}/console/sign-in`);
  await page.getByLabel('Environment').fill(env);
  await page.getByLabel('Username').fill(username);
  await page.getByLabel('Password', { exact: true }).fill(o.password ?? PASSWORD);
  if (o.code) await page.getByLabel('Authentication code').fill(o.code);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForLoadState('domcontentloaded');
  return page;
}

const totp = () =>
  new TOTP({ algorithm: 'SHA1', digits: 6, period: 30, secret: Secret.fromBase32(mfaSecret) }).generate();

async function sessionCookie(context: BrowserContext): Promise<string> {
  const cookie = (await context.cookies(base)).find((c) => c.name === 'vigil_session');
  if (!cookie) throw new Error('no session cookie');
  return `${cookie.name}=${cookie.value}`;
}

beforeAll(async () => {
  const config = testConfig({
    mqttEnabled: false,
    consoleLiveMs: 200,
    consoleSignInPerMinute: 1000,
    loginMaxFailures: 3,
    availabilityCheckMs: 200,
    // The cold room's day is uploaded right after its pre-parser is set: no cached "none" may miss it.
    catalogCacheMs: 0,
  });
  vigil = await startVigil(config, createLogger(process.env.VIGIL_TEST_LOG ?? 'silent'));
  redis = connectRedis(config.redisUrl, 'command', 'test');
  base = `http://127.0.0.1:${vigil.ports.api}`;
  gateway = `http://127.0.0.1:${vigil.ports.gateway}`;
  const a = admin();
  await a.createEnvironment('acme', 'en');
  await a.applyDefinition({ kind: 'private', env: 'acme' }, COMFORT_SPEC, COMFORT_PARSER);
  await a.applyDefinition({ kind: 'private', env: 'acme' }, PROBE_SPEC, PROBE_PARSER);
  for (const [name, displayName, labels] of [
    ['hall_sensor', 'Hall sensor', { site: 'amsterdam', floor: '1' }],
    ['server_room', 'Server room', { site: 'amsterdam', floor: '0' }],
    ['meeting_room', 'Meeting room 2', { site: 'utrecht' }],
  ] as const) {
    await a.createDevice('acme', {
      name,
      displayName,
      definitionName: 'ComfortSensors',
      definitionIsPublic: false,
      labels,
    });
  }
  await a.setPreparser('acme', BATCH_PREPARSER, true);
  await a.applyDefinition({ kind: 'private', env: 'acme' }, COLD_ROOM_SPEC, COLD_ROOM_PARSER);
  await a.createDevice('acme', {
    name: 'cold_room',
    displayName: 'Cold room 1',
    definitionName: 'ColdRoom',
    definitionIsPublic: false,
    labels: { site: 'utrecht', zone: 'cold' },
  });
  await a.createDevice('acme', {
    name: 'probe_1',
    displayName: HOSTILE,
    definitionName: 'Probe',
    definitionIsPublic: false,
  });
  keyA = (await a.createApiKey('acme', 'test')).key;
  await a.createUser('acme', 'alice', PASSWORD);
  mfaSecret = (await a.enableMfa('acme', 'alice')).secret;
  await a.createUser('acme', 'carol', PASSWORD);
  await a.createUser('acme', 'dave', PASSWORD);
  await a.createUser('acme', 'vera', PASSWORD, 'viewer');
  await a.createEnvironment('beta', 'en');
  await a.applyDefinition({ kind: 'private', env: 'beta' }, PROBE_SPEC, PROBE_PARSER);
  await a.createDevice('beta', {
    name: 'beta_device',
    displayName: 'Beta device',
    definitionName: 'Probe',
    definitionIsPublic: false,
  });
  keyB = (await a.createApiKey('beta', 'test')).key;
  await a.createUser('beta', 'bob', PASSWORD);

  await submit(keyA, { deviceName: 'hall_sensor', Temperature: 21.5, Humidity: 40, CO2: 620, Battery: 3100 });
  await submit(keyA, { deviceName: 'server_room', Temperature: 31.2, Humidity: 35, Battery: 3000 });
  await submit(keyA, {
    deviceName: 'meeting_room',
    Temperature: 22.1,
    Humidity: 74,
    CO2: 1180,
    Battery: 2950,
  });
  await submit(keyA, { deviceName: 'hall_sensor', Temperature: 22.4, Humidity: 41, CO2: 640, Battery: 3090 });
  await submit(keyA, { deviceName: 'probe_1', fail: HOSTILE });
  await submit(keyB, { deviceName: 'beta_device', Temperature: 20 });
  await submit(keyA, { deviceName: 'cold_room', readings: coldRoomDay(Date.now()) });
  await processed('acme', 5);
  await processed('beta', 1);
  for (const [env, device, count] of [
    ['acme', 'hall_sensor', 2],
    ['acme', 'server_room', 1],
    ['acme', 'meeting_room', 1],
    ['acme', 'probe_1', 1],
    ['beta', 'beta_device', 1],
  ] as const)
    await kept(env, device, count);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (redis) await closeRedis(redis);
  await vigil?.close();
});

describe('console in a browser', () => {
  it('sends / to the console, signs in with an MFA code, refuses a wrong password, and sets strict cookies and CSP', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    const first = await page.goto(`${base}/`);
    expect(new URL(page.url()).pathname).toBe('/console/sign-in');
    expect(first?.status()).toBe(200);
    const csp = (await first?.allHeaders())?.['content-security-policy'] ?? '';
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');

    // Wrong password: an error and nothing else.
    const wrong = await signIn(context, 'acme', 'alice', { password: 'not the password' });
    await until(
      () => wrong.getByRole('alert').textContent(),
      (v) => expect(v).toContain('Wrong environment, username, password or code'),
    );
    expect((await context.cookies(base)).some((c) => c.name === 'vigil_session')).toBe(false);

    // Without the code: asked for it; with it (by keyboard): signed in.
    const asked = await signIn(context, 'acme', 'alice');
    await until(
      () => asked.getByRole('alert').textContent(),
      (v) => expect(v).toContain('multi-factor'),
    );
    await asked.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await asked.getByLabel('Authentication code').fill(totp());
    await asked.getByLabel('Authentication code').press('Enter');
    await asked.waitForURL(`${base}/console/fleet`);
    await until(
      () => asked.getByRole('heading', { level: 1 }).textContent(),
      (v) => expect(v).toBe('Fleet'),
    );

    const [cookie] = (await context.cookies(base)).filter((c) => c.name === 'vigil_session');
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', secure: false, path: '/' });
    await context.close();
  });

  it('locks an account after repeated failures and says so', async () => {
    const context = await browser.newContext();
    for (let i = 0; i < 3; i++) {
      const p = await signIn(context, 'acme', 'carol', { password: `wrong ${i}` });
      await until(
        () => p.getByRole('alert').textContent(),
        (v) => expect(v).toContain('Wrong environment'),
      );
      await p.close();
    }
    const locked = await signIn(context, 'acme', 'carol');
    await until(
      () => locked.getByRole('alert').textContent(),
      (v) => expect(v).toContain('Too many failed sign-ins'),
    );
    expect((await context.cookies(base)).some((c) => c.name === 'vigil_session')).toBe(false);
    await context.close();
  });

  it('signs out on the server: the old session cookie no longer opens a page', async () => {
    const context = await browser.newContext();
    const page = await signIn(context, 'acme', 'dave');
    await page.waitForURL(`${base}/console/fleet`);
    const old = await sessionCookie(context);
    const before = await fetch(`${base}/console/fleet`, { headers: { cookie: old }, redirect: 'manual' });
    expect(before.status).toBe(200);
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(/\/console\/sign-in\?signed-out/);
    await until(
      () => page.getByText('You are signed out').count(),
      (v) => expect(v).toBe(1),
    );
    const after = await fetch(`${base}/console/fleet`, { headers: { cookie: old }, redirect: 'manual' });
    expect(after.status).toBe(303);
    expect(after.headers.get('location')).toMatch(/^\/console\/sign-in/);
    await context.close();
  });

  it('lists the fleet with statuses in colour and text, counts per status, and fits a 375 px screen', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 860 } });
    const page = await signIn(context, 'acme', 'dave');
    await page.waitForURL(`${base}/console/fleet`);
    const rows = page.locator('#fleet-rows tr');
    await until(
      () => rows.count(),
      (v) => expect(v).toBe(5),
    );
    const server = page.locator('#fleet-rows tr[data-key="server_room"]');
    await until(
      () => server.locator('.pill').first().textContent(),
      (v) => expect(v).toBe('Critical'),
    );
    expect(await server.locator('.pill').first().getAttribute('class')).toContain('st-critical');
    expect(await server.locator('time').getAttribute('title')).toMatch(
      /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/,
    );
    await until(
      () => server.locator('time').textContent(),
      (v) => expect(v).toMatch(/^(just now|\d+ (s|min) ago)$/),
    );
    expect(await page.locator('.count.st-critical .count-n').textContent()).toBe('1');
    // The search box filters as one types.
    await page.getByLabel('Search devices').fill('meeting');
    await until(
      () => page.locator('#fleet-rows tr:not([hidden])').count(),
      (v) => expect(v).toBe(1),
    );
    await page.getByLabel('Search devices').fill('');
    await page.screenshot({ path: join(SHOTS, 'console-fleet.png'), animations: 'disabled' });

    await page.setViewportSize({ width: 375, height: 800 });
    const overflow = await page.evaluate<number>('document.documentElement.scrollWidth');
    expect(overflow).toBeLessThanOrEqual(375);
    // Every page's link is on screen, none scrolled out of view.
    for (const link of await page.locator('.topbar nav a').all()) {
      const box = await link.boundingBox();
      expect(
        box && box.x >= 0 && box.x + box.width <= 375,
        `${await link.textContent()} at ${JSON.stringify(box)}`,
      ).toBe(true);
    }
    await page.screenshot({ path: join(tmpdir(), 'vigil-console-fleet-375.png'), fullPage: true });
    await context.close();
  });

  it('shows a posted payload on the open device page without a reload, and draws its chart', async () => {
    const influx = createInfluxClient({ url: vigil.config.influxUrl, database: vigil.config.influxDatabase });
    // The chart's values are in InfluxDB before the page is opened.
    await eventually(
      async () =>
        (
          await queryRecentValues(influx, {
            env: 'acme',
            device: 'hall_sensor',
            sensors: ['Temperature'],
            sinceMs: Date.now() - 3_600_000,
            maxPerSensor: 10,
          })
        ).get('Temperature')?.values.length === 2,
      { message: 'the hall sensor’s temperatures in InfluxDB' },
    );
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await signIn(context, 'acme', 'dave');
    await page.waitForURL(`${base}/console/fleet`);
    await page.getByRole('link', { name: 'Hall sensor' }).click();
    await page.waitForURL(`${base}/console/devices/hall_sensor`);
    await until(
      () => page.locator('#live-status').getAttribute('data-state'),
      (v) => expect(v).toBe('on'),
    );
    const temperature = page.locator('#device-points tr[data-key="Temperature"] .value');
    expect(await temperature.textContent()).toContain('22.4');
    await page.evaluate('window.marker = 1');

    await submit(keyA, {
      deviceName: 'hall_sensor',
      Temperature: 26.5,
      Humidity: 42,
      CO2: 700,
      Battery: 3080,
    });
    await until(
      () => temperature.textContent(),
      (v) => expect(v).toContain('26.5'),
    );
    expect(await page.evaluate('window.marker')).toBe(1);
    await until(
      () => page.locator('#device-points tr[data-key="Temperature"] .pill').textContent(),
      (v) => expect(v).toBe('Warning'),
    );
    // The recent payloads come up to a second after the values they brought.
    await until(
      () => page.locator('#device-payloads li').count(),
      (v) => expect(v).toBe(3),
    );

    // The chart: uPlot's canvas holds the dark value dots, not only axes.
    const dots = async () =>
      page.evaluate<number>(`(() => {
        const canvas = document.querySelector('.chart-canvas[data-sensor="Temperature"] canvas');
        const ctx = canvas && canvas.getContext('2d');
        if (!ctx) return 0;
        const { data } = ctx.getImageData(0, 0, canvas.width, canvas.height);
        let n = 0;
        for (let i = 0; i < data.length; i += 4) {
          if (data[i + 3] > 200 && data[i] < 40 && data[i + 1] < 50 && data[i + 2] < 70) n += 1;
        }
        return n;
      })()`);
    await until(dots, (v) => expect(v).toBeGreaterThan(10));
    await context.close();
  });

  it('shows a device’s day: its open alarm, 24 hours of charts and its door as steps', async () => {
    const influx = createInfluxClient({ url: vigil.config.influxUrl, database: vigil.config.influxDatabase });
    await eventually(
      async () =>
        (
          await queryRecentValues(influx, {
            env: 'acme',
            device: 'cold_room',
            sensors: ['Temperature'],
            sinceMs: Date.now() - 25 * 3_600_000,
            maxPerSensor: 200,
          })
        ).get('Temperature')?.values.length === 96,
      { timeoutMs: 60_000, message: 'the cold room’s day in InfluxDB' },
    );
    await kept('acme', 'cold_room', 20);
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await signIn(context, 'acme', 'dave');
    await page.waitForURL(`${base}/console/fleet`);
    await page.goto(`${base}/console/devices/cold_room`);
    await until(
      () => page.locator('#device-alarms tr .pill').allTextContents(),
      (v) => expect(v).toEqual(['Warning']),
    );
    // The hourly averages span the day; the door's two openings are steps.
    const hourly = await eventually(
      () => canvasPixels(page, '.chart-canvas[data-sensor="Temperature"]', [36, 87, 214]),
      { until: (px) => px.count > 100, message: 'the hourly averages' },
    );
    expect(hourly.left).toBeLessThan(0.2);
    await eventually(() => canvasPixels(page, '.chart-canvas[data-sensor="Door"]', [36, 87, 214]), {
      until: (px) => px.count > 100,
      message: 'the door’s steps',
    });
    expect(await page.locator('#chart-span').textContent()).toBe('Showing the last 24 hours.');
    await page.screenshot({
      path: join(SHOTS, 'console-device.png'),
      fullPage: true,
      animations: 'disabled',
    });
    await context.close();
  });

  it('acknowledges an alarm from the alarms page; a viewer sees no Acknowledge and is refused', async () => {
    const context = await browser.newContext();
    const page = await signIn(context, 'acme', 'dave');
    await page.waitForURL(`${base}/console/fleet`);
    await page.getByRole('link', { name: 'Alarms' }).click();
    await page.waitForURL(`${base}/console/alarms`);
    const row = page
      .locator('#alarm-rows tr')
      .filter({ hasText: 'Server room' })
      .filter({ hasText: 'Temperature' });
    expect(await row.locator('.pill').first().textContent()).toBe('Critical');
    await row.getByRole('textbox').fill('Fan replaced, <b>watching</b>');
    await row.getByRole('button', { name: 'Acknowledge' }).click();
    await page.waitForURL(/\/console\/alarms\?done=acknowledged/);
    const acked = page
      .locator('#alarm-rows tr')
      .filter({ hasText: 'Server room' })
      .filter({ hasText: 'Temperature' });
    await until(
      () => acked.locator('.acked').textContent(),
      (v) => expect(v).toContain('by dave'),
    );
    expect(await acked.locator('.note').textContent()).toBe('“Fan replaced, <b>watching</b>”');
    await context.close();

    const viewer = await browser.newContext();
    const vera = await signIn(viewer, 'acme', 'vera');
    await vera.waitForURL(`${base}/console/fleet`);
    await vera.goto(`${base}/console/alarms`);
    expect(await vera.locator('#alarm-rows tr').count()).toBeGreaterThan(1);
    expect(await vera.getByRole('button', { name: 'Acknowledge' }).count()).toBe(0);
    await vera.goto(`${base}/console/devices/meeting_room`);
    expect(await vera.locator('#device-alarms tr').count()).toBe(2);
    expect(await vera.getByRole('button', { name: 'Acknowledge' }).count()).toBe(0);
    const token = await vera.locator('input[name="_csrf"]').first().getAttribute('value');
    const refused = await fetch(`${base}/console/alarms/acknowledge`, {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        cookie: await sessionCookie(viewer),
        origin: base,
      },
      body: new URLSearchParams({
        _csrf: token!,
        deviceName: 'meeting_room',
        sensorName: 'Humidity',
      }).toString(),
    });
    expect(refused.status).toBe(403);
    expect(await refused.text()).toContain('may look at alarms but not acknowledge them');
    await vera.goto(`${base}/console/alarms`);
    const humidity = vera
      .locator('#alarm-rows tr')
      .filter({ hasText: 'Meeting room 2' })
      .filter({ hasText: 'Humidity' });
    expect(await humidity.locator('td[data-label="Acknowledgement"]').textContent()).toContain(
      'Not acknowledged',
    );
    await viewer.close();
  });

  it('workbench: runs the parser on a payload, marks the failing line, and replays recent payloads', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const page = await signIn(context, 'acme', 'dave');
    await page.waitForURL(`${base}/console/fleet`);

    // A good payload: converted values, the formatted current value and the status.
    await page.goto(`${base}/console/definitions/private/ComfortSensors?device=hall_sensor`);
    await page.waitForSelector('body[data-editor="ready"]');
    const box = page.getByLabel('Payload', { exact: true });
    expect(await box.inputValue()).toContain('"Temperature":26.5');
    await box.fill(JSON.stringify({ Temperature: 27.4, Humidity: 50, Battery: 2700 }));
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForLoadState('domcontentloaded');
    const row = page.locator('#run-result tr[data-sensor="Temperature"]');
    await until(
      () => row.locator('td[data-label="Current value"]').textContent(),
      (v) => expect(v).toBe('27.4 °C'),
    );
    expect(await row.locator('td[data-label="Converted"]').textContent()).toBe('27.4');
    expect(await row.locator('.pill').textContent()).toBe('Warning');
    expect(await page.locator('#run-result tr[data-sensor="Battery"] .pill').textContent()).toBe('Error');

    // Replay of the published version over the devices' recent payloads: nothing would change (the
    // diffs of a changed draft: console-editor.test.ts).
    await page.getByRole('button', { name: 'Replay', exact: true }).click();
    await page.waitForLoadState('domcontentloaded');
    await until(
      () => page.locator('#replay-result h3').textContent(),
      (v) =>
        expect(v).toMatch(
          /^Replay of \d+ recent payloads of 3 devices beside published version 1: nothing would change$/,
        ),
    );

    // A failing payload: the error with its line and column, the line marked in the parser's editor.
    await page.goto(`${base}/console/definitions/private/Probe?device=probe_1`);
    await page.waitForSelector('body[data-editor="ready"]');
    expect(await page.getByLabel('Payload', { exact: true }).inputValue()).toContain('onerror');
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForSelector('body[data-editor="ready"]');
    await until(
      () => page.locator('#run-result .loc code').textContent(),
      (v) => expect(v).toMatch(/^Probe\.js:3:\d+$/),
    );
    expect(await page.locator('#ed-parser').getAttribute('data-error-line')).toBe('3');
    // Run unchanged, the editor still holds the published version.
    expect(await page.locator('#yaml-h').textContent()).toContain('version 1, published');
    expect(await page.locator('#ed-parser').getAttribute('data-error-message')).toContain(HOSTILE);
    const marked = page.locator('.code-editor').nth(1).locator('.cm-lintRange-error');
    expect(await marked.count()).toBeGreaterThan(0);
    expect(await marked.first().textContent()).toContain("new Error('cannot read '");
    expect(await page.locator('#run-result').textContent()).toContain(HOSTILE);
    await page.screenshot({
      path: join(SHOTS, 'console-workbench.png'),
      fullPage: true,
      animations: 'disabled',
    });
    await context.close();
  });

  it('ingestion log: a parser failure with file:line:column and its payload', async () => {
    const context = await browser.newContext();
    const page = await signIn(context, 'acme', 'dave');
    await page.waitForURL(`${base}/console/fleet`);
    await page.goto(`${base}/console/ingestion?outcome=rejected`);
    const entry = page.locator('#ingest-rows li').first();
    await until(
      () => entry.locator('.code').textContent(),
      (v) => expect(v).toBe('PARSER_ERROR'),
    );
    expect(await entry.locator('.loc code').textContent()).toMatch(/^Probe\.js:3:\d+$/);
    await entry.locator('summary').click();
    expect(await entry.locator('pre.payload').textContent()).toContain(HOSTILE);
    await context.close();
  });

  it('renders a display name, a payload and a parser error holding markup as text', async () => {
    const context = await browser.newContext();
    let dialogs = 0;
    context.on('page', (p) => p.on('dialog', (d) => void d.dismiss().then(() => (dialogs += 1))));
    const page = await signIn(context, 'acme', 'dave');
    page.on('dialog', (d) => void d.dismiss().then(() => (dialogs += 1)));
    await page.waitForURL(`${base}/console/fleet`);
    for (const path of [
      '/console/fleet',
      '/console/devices/probe_1',
      '/console/ingestion',
      '/console/events',
    ]) {
      await page.goto(`${base}${path}`);
      expect(await page.locator('img').count(), path).toBe(0);
    }
    await page.goto(`${base}/console/fleet`);
    expect(await page.locator('#fleet-rows tr[data-key="probe_1"] a').textContent()).toBe(HOSTILE);
    await page.goto(`${base}/console/devices/probe_1`);
    expect(await page.locator('h1').textContent()).toBe(HOSTILE);
    expect(await page.locator('#device-payloads pre.payload').first().textContent()).toContain(HOSTILE);
    expect(await page.locator('#device-payloads .msg').first().textContent()).toContain(HOSTILE);
    expect(dialogs).toBe(0);
    await context.close();
  });

  it('shows a user of another environment nothing of this one, by page or by URL', async () => {
    const context = await browser.newContext();
    const page = await signIn(context, 'beta', 'bob');
    await page.waitForURL(`${base}/console/fleet`);
    expect(await page.locator('#fleet-rows tr').count()).toBe(1);
    const text = async () => (await page.locator('main').textContent()) ?? '';
    expect(await text()).toContain('Beta device');
    for (const path of [
      '/console/fleet',
      '/console/events',
      '/console/alarms',
      '/console/ingestion',
      '/console/definitions',
    ]) {
      await page.goto(`${base}${path}`);
      const shown = await text();
      for (const name of ['hall_sensor', 'Hall sensor', 'server_room', 'ComfortSensors', 'probe_1']) {
        expect(shown, `${path} shows ${name}`).not.toContain(name);
      }
    }
    for (const path of [
      '/console/devices/hall_sensor',
      '/console/definitions/private/ComfortSensors',
      '/console/events?device=hall_sensor',
      '/console/ingestion?device=hall_sensor',
    ]) {
      const res = await page.goto(`${base}${path}`);
      const shown = await text();
      expect(shown, path).not.toContain('Hall sensor');
      expect(shown, path).not.toContain('22.4');
      if (path.startsWith('/console/devices') || path.startsWith('/console/definitions'))
        expect(res?.status(), path).toBe(404);
    }
    // The JSON live stream of a device of A answers nothing of it either.
    const fleetJson = await page.goto(`${base}/console/fleet.json`);
    expect(await fleetJson?.text()).not.toContain('hall_sensor');
    await context.close();
  });

  it('refuses a cross-site POST that carries the session cookie, and a POST without the form’s token', async () => {
    const context = await browser.newContext();
    const page = await signIn(context, 'acme', 'dave');
    await page.waitForURL(`${base}/console/fleet`);
    const cookie = await sessionCookie(context);
    const token = await page.locator('input[name="_csrf"]').first().getAttribute('value');
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
    const post = (path: string, body: string, headers: Record<string, string>) =>
      fetch(`${base}${path}`, {
        method: 'POST',
        body,
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie, ...headers },
      });
    const crossSite = await post('/console/sign-out', form({ _csrf: token! }), {
      origin: 'http://evil.example',
    });
    expect(crossSite.status).toBe(403);
    const fetchSite = await post('/console/sign-out', form({ _csrf: token! }), {
      'sec-fetch-site': 'cross-site',
    });
    expect(fetchSite.status).toBe(403);
    const noToken = await post('/console/definitions/private/Probe', form({ action: 'run', payload: '{}' }), {
      origin: base,
    });
    expect(noToken.status).toBe(403);
    // The session is still alive: none of these signed it out.
    const still = await fetch(`${base}/console/fleet`, { headers: { cookie }, redirect: 'manual' });
    expect(still.status).toBe(200);
    // A real page of another origin posting a form: the browser sends no cookie (SameSite=Strict).
    const evil = await context.newPage();
    await evil.route('http://evil.example/', (route) =>
      route.fulfill({
        contentType: 'text/html',
        body: `<form method="post" action="${base}/console/sign-out"><input name="_csrf" value="${token}"><button>go</button></form>`,
      }),
    );
    await evil.goto('http://evil.example/');
    await evil.getByRole('button', { name: 'go' }).click();
    await evil.waitForLoadState('domcontentloaded');
    const after = await fetch(`${base}/console/fleet`, { headers: { cookie }, redirect: 'manual' });
    expect(after.status).toBe(200);
    await context.close();
  });
});
