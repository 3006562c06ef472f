/**
 * The console's management pages in a real browser (Debian's Chromium driven by playwright-core)
 * against a whole Vigil on real Redis and InfluxDB: an admin creates a device through the form and
 * finds it with its labels in the fleet, filtered by label; imports a CSV after its preview (one bad
 * row shown, fixed, then imported); rotates an API key with an overlap (the new key shown once with
 * its copy button, the old one still accepted) and without one (the old one refused); creates a key
 * with an auto-create rule, shown in its row, and turns the rule off on its page; overrides a
 * data point's rules where the device page shows them; reads the change in the audit log. A viewer
 * sees no Manage link and no management button, and gets 403 FORBIDDEN by URL. The navigation with
 * Manage fits 375 px. Over plain HTTP, every form's CSRF refusal: console-manage-http.test.ts.
 * Screenshots go to docs/images/ with VIGIL_UPDATE_SCREENSHOTS=1 (elsewhere to a temporary folder).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil, type RunningVigil } from '../../src/main.ts';
import { closeRedis, connectRedis, type Redis } from '../../src/redis/connect.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import { COMFORT_PARSER, COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { launchChromium, openSignedIn } from '../support/browser.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

const PASSWORD = 'correct horse battery';
const SHOTS =
  process.env.VIGIL_UPDATE_SCREENSHOTS === '1'
    ? join(import.meta.dirname, '..', '..', 'docs', 'images')
    : mkdtempSync(join(tmpdir(), 'vigil-shots-'));

let vigil: RunningVigil;
let redis: Redis;
let browser: Browser;
let base: string;
let gateway: string;
let key: string;
let spareKey: string;
const admin = () => createTenancyAdmin(adminDeps(redis, createKeys(vigil.config.keyPrefix)));
const store = () => createTenancyStore({ redis, keys: createKeys(vigil.config.keyPrefix) });

async function submit(apiKey: string, body: Record<string, unknown>): Promise<number> {
  const res = await fetch(`${gateway}/gateway/submit/${apiKey}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  await res.arrayBuffer();
  return res.status;
}

async function signedIn(
  username: string,
  viewport = { width: 1280, height: 900 },
): Promise<{ context: BrowserContext; page: Page }> {
  const context = await browser.newContext({ viewport });
  const page = await openSignedIn(context, base, { env: 'acme', username, password: PASSWORD });
  return { context, page };
}

/** The rows' keys (data-key), in order. */
const keysOf = async (rows: Locator) =>
  Promise.all((await rows.all()).map((r) => r.getAttribute('data-key')));

beforeAll(async () => {
  const config = testConfig({
    mqttEnabled: false,
    consoleLiveMs: 200,
    consoleSignInPerMinute: 1000,
    // A revoked or expired key is refused at the next submission, not within the cache time.
    credentialCacheMs: 0,
    catalogCacheMs: 0,
  });
  vigil = await startVigil(config, createLogger(process.env.VIGIL_TEST_LOG ?? 'silent'));
  redis = connectRedis(config.redisUrl, 'command', 'test');
  base = `http://127.0.0.1:${vigil.ports.api}`;
  gateway = `http://127.0.0.1:${vigil.ports.gateway}`;
  const a = admin();
  await a.createEnvironment('acme', 'en');
  await a.applyDefinition({ kind: 'private', env: 'acme' }, COMFORT_SPEC, COMFORT_PARSER);
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
  key = (await a.createApiKey('acme', 'sites')).key;
  spareKey = (await a.createApiKey('acme', 'spare')).key;
  await a.createUser('acme', 'ada', PASSWORD, 'admin');
  await a.createUser('acme', 'vera', PASSWORD, 'viewer');
  expect(
    await submit(key, {
      deviceName: 'hall_sensor',
      Temperature: 21.5,
      Humidity: 40,
      CO2: 920,
      Battery: 3100,
    }),
  ).toBe(202);
  expect(
    await submit(key, { deviceName: 'server_room', Temperature: 31.2, Humidity: 35, Battery: 3000 }),
  ).toBe(202);
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (redis) await closeRedis(redis);
  await vigil?.close();
});

describe('console management in a browser', () => {
  it('creates a device through the form; the fleet shows it with its labels and filters by label', async () => {
    const { context, page } = await signedIn('ada');
    await page.getByRole('link', { name: 'Manage' }).click();
    await page.waitForURL(`${base}/console/manage/devices`);
    await page.getByRole('link', { name: 'New device' }).click();
    await page.getByLabel('Device name').fill('freezer-7');
    await page.getByLabel('Display name').fill('Freezer 7');
    await page.getByLabel('Definition').selectOption('private:ComfortSensors');
    await page.getByLabel('Label 1 key').fill('site');
    await page.getByLabel('Label 1 value').fill('utrecht');
    await page.getByLabel('Label 2 key').fill('customer');
    await page.getByLabel('Label 2 value').fill('acme');
    await page.getByLabel('Availability (minutes)').fill('15');
    await page.getByRole('button', { name: 'Create device' }).click();
    await page.waitForURL(`${base}/console/devices/freezer-7`);
    expect(await page.getByRole('status').filter({ hasText: 'created' }).textContent()).toBe(
      'Device freezer-7 created.',
    );
    expect(await page.locator('h1').textContent()).toBe('Freezer 7');
    expect(await store().getDevice('acme', 'freezer-7')).toMatchObject({
      labels: { site: 'utrecht', customer: 'acme' },
      availabilityMinutes: 15,
    });

    await page.goto(`${base}/console/fleet`);
    const row = page.locator('#fleet-rows tr[data-key="freezer-7"]');
    expect(await row.locator('.label-tag').allTextContents()).toEqual(['customer=acme', 'site=utrecht']);
    await page.getByLabel('Labels').fill('site=utrecht');
    await page.getByRole('button', { name: 'Search' }).click();
    await page.waitForURL(/labels=site%3Dutrecht/);
    expect(await keysOf(page.locator('#fleet-rows tr'))).toEqual(['freezer-7', 'meeting_room']);
    // The instant search finds labels too.
    await page.goto(`${base}/console/fleet`);
    await page.getByLabel('Search devices').fill('floor=0');
    await eventually(async () => (await page.locator('#fleet-rows tr:not([hidden])').count()) === 1, {
      message: 'the search to leave the server room',
    });
    await context.close();
  });

  it('imports a CSV after its preview: one bad row shown, fixed, then imported', async () => {
    const { context, page } = await signedIn('ada');
    await page.goto(`${base}/console/manage/devices`);
    await page.getByRole('link', { name: 'Import CSV' }).click();
    await page.waitForURL(`${base}/console/manage/devices/import`);
    const csv = [
      'deviceName,displayName,definitionName,labels,availabilityMinutes',
      'cold-1,Cold room 1,ComfortSensors,site=amsterdam;floor=2,',
      'cold-2,Cold room 2,ColdStore,site=amsterdam,',
      'hall_sensor,Hall sensor,ComfortSensors,site=amsterdam;floor=1;wing=east,30',
    ].join('\n');
    await page
      .getByLabel('CSV file')
      .setInputFiles({ name: 'devices.csv', mimeType: 'text/csv', buffer: Buffer.from(csv) });
    await page.getByRole('button', { name: 'Check' }).click();
    const report = page.locator('#import-report');
    await report.waitFor();
    expect(await report.locator('h2').textContent()).toContain('1 row cannot be imported');
    const bad = report.locator('.import-failures tbody tr');
    expect(await bad.count()).toBe(1);
    expect(await bad.locator('td').allTextContents()).toEqual([
      '3',
      'definitionName',
      'DEFINITION_NOT_FOUND',
      'no private definition ColdStore',
    ]);
    expect(await report.locator('.count-n').allTextContents()).toEqual(['1', '1', '0', '1']);
    // Nothing can be imported yet, and nothing was written.
    expect(await page.getByRole('button', { name: /^Import/ }).count()).toBe(0);
    expect(await store().getDevice('acme', 'cold-1')).toBeNull();
    await page.screenshot({
      path: join(SHOTS, 'console-manage-import.png'),
      fullPage: true,
      animations: 'disabled',
    });

    // The file is in the text box now: fix the row there and check again.
    const box = page.getByLabel('CSV', { exact: true });
    expect(await box.inputValue()).toBe(csv);
    await box.fill(csv.replace('ColdStore', 'ComfortSensors'));
    await page.getByRole('button', { name: 'Check again' }).click();
    await eventually(async () => (await report.locator('h2').textContent())?.includes('Every row is valid'), {
      message: 'the second check to pass',
    });
    expect(await report.locator('.count-n').allTextContents()).toEqual(['2', '1', '0', '0']);
    await page.getByRole('button', { name: 'Import 3 devices' }).click();
    await page.waitForURL(`${base}/console/manage/devices`);
    expect(await page.locator('.flash-message').textContent()).toBe(
      'Imported: 2 created, 1 changed, 0 unchanged.',
    );
    expect(await store().getDevice('acme', 'cold-2')).toMatchObject({ labels: { site: 'amsterdam' } });
    expect(await store().getDevice('acme', 'hall_sensor')).toMatchObject({
      labels: { site: 'amsterdam', floor: '1', wing: 'east' },
      availabilityMinutes: 30,
    });
    await page.getByLabel('Labels').fill('floor=2');
    await page.getByRole('button', { name: 'Filter' }).click();
    expect(await keysOf(page.locator('#manage-device-rows tr'))).toEqual(['cold-1']);
    await context.close();
  });

  it('rotates an API key with an overlap: the new key shown once, the old one still accepted; without one, refused', async () => {
    const { context, page } = await signedIn('ada');
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: base });
    await page.goto(`${base}/console/manage/api-keys`);
    const row = page.locator('#api-key-rows tr').filter({ hasText: 'sites' });
    await row.getByLabel('Overlap of sites').selectOption({ label: '1 day' });
    await row.getByRole('button', { name: 'Rotate' }).click();
    const shown = page.locator('.secret-once');
    await shown.waitFor();
    expect(await shown.getByRole('alert').textContent()).toContain('will not show it again');
    const newKey = await shown.locator('input.secret').inputValue();
    expect(newKey).not.toBe(key);
    expect(await shown.locator('p.small').textContent()).toMatch(
      /keeps working until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC/,
    );
    await shown.getByRole('button', { name: 'Copy' }).click();
    await eventually(async () => (await shown.getByRole('button', { name: 'Copied' }).count()) === 1, {
      message: 'the copy button to say so',
    });
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(newKey);
    await page.screenshot({ path: join(tmpdir(), 'vigil-console-rotate.png'), fullPage: true });
    // Both keys work during the overlap; the old one is listed with its end, about a day from now.
    expect(await submit(key, { deviceName: 'hall_sensor', Temperature: 21 })).toBe(202);
    expect(await submit(newKey, { deviceName: 'hall_sensor', Temperature: 21 })).toBe(202);
    const old = (await admin().listApiKeys('acme')).find((k) => k.name === 'sites');
    const endsIn = Date.parse(old?.expiresUTC ?? '') - Date.now();
    expect(endsIn).toBeGreaterThan(23.9 * 3_600_000);
    expect(endsIn).toBeLessThanOrEqual(24 * 3_600_000);
    // Shown once: the listing has no key, and a reload of the list shows none.
    await page.goto(`${base}/console/manage/api-keys`);
    expect(await page.locator('input.secret').count()).toBe(0);
    expect(await page.content()).not.toContain(newKey);

    // Without an overlap the old key is refused at once.
    const spare = page.locator('#api-key-rows tr').filter({ hasText: 'spare' });
    await spare.getByLabel('Overlap of spare').selectOption('0');
    await spare.getByRole('button', { name: 'Rotate' }).click();
    await page.locator('.secret-once').waitFor();
    expect(await page.locator('.secret-once p.small').textContent()).toContain('is refused from now on');
    const spareNew = await page.locator('.secret-once input.secret').inputValue();
    expect(await submit(spareNew, { deviceName: 'hall_sensor', Temperature: 21 })).toBe(202);
    expect(await submit(spareKey, { deviceName: 'hall_sensor', Temperature: 21 })).toBe(401);
    await context.close();
  });

  it('creates an API key that creates devices, shows its rule in its row, and turns it off', async () => {
    const { context, page } = await signedIn('ada');
    await page.goto(`${base}/console/manage/api-keys`);
    const form = page.locator('form').filter({ hasText: 'New API key' });
    await form.getByLabel('Name').fill('ttn');
    await form.getByLabel('Create unknown devices of').selectOption({ label: 'ComfortSensors' });
    await form.getByLabel('Label 1 key').fill('site');
    await form.getByLabel('Label 1 value').fill('dock');
    await form.getByLabel('At most (devices)').fill('25');
    await form.getByRole('button', { name: 'Create API key' }).click();
    await page.locator('.secret-once').waitFor();
    const row = page.locator('#api-key-rows tr').filter({ hasText: 'ttn' });
    expect(await row.locator('td[data-label="Auto-create"]').textContent()).toMatch(
      /ComfortSensors.*0 of 25 created.*site=dock/,
    );
    await row.getByRole('link', { name: 'Change' }).click();
    await page
      .getByLabel('Create unknown devices of')
      .selectOption({ label: 'No one: refuse devices it does not know' });
    await page.getByRole('button', { name: 'Save' }).click();
    await page.waitForURL(`${base}/console/manage/api-keys`);
    expect(await page.locator('.flash, [role="status"]').first().textContent()).toContain(
      'creates no devices',
    );
    const cell = page
      .locator('#api-key-rows tr')
      .filter({ hasText: 'ttn' })
      .locator('td[data-label="Auto-create"]');
    expect(await cell.textContent()).toContain('off');
    expect((await admin().getApiKey('acme', 'ttn')).autoCreate).toBeNull();
    await context.close();
  });

  it('shows where a device overrides its definition’s rules, and lets an admin change the override', async () => {
    const { context, page } = await signedIn('ada');
    await page.goto(`${base}/console/devices/hall_sensor`);
    const co2 = page.locator('#device-rules tr[data-key="CO2"]');
    expect(await co2.getAttribute('data-applies')).toBe('definition');
    expect(await co2.locator('.rules').textContent()).toContain('above 1000');
    await co2.getByRole('link', { name: 'Override' }).click();
    await page.waitForURL(`${base}/console/devices/hall_sensor/rules/CO2`);
    expect(await page.getByLabel('Value of rule 1').inputValue()).toBe('1000');
    await page.getByLabel('Value of rule 1').fill('890');
    await page.getByLabel('How long rule 1 must hold').fill('5m');
    await page.getByLabel('Description of rule 1').fill('Stuffy');
    await page.getByRole('button', { name: 'Save override' }).click();
    await page.waitForURL(`${base}/console/devices/hall_sensor#device-rules`);
    expect(await co2.getAttribute('data-applies')).toBe('override');
    expect(await co2.locator('.tag-override').textContent()).toBe('Device override');
    expect(await co2.locator('.rules').textContent()).toContain('above 890 for 5m — Stuffy');
    expect(await co2.locator('.definition-rules').textContent()).toBe('Definition: WARNING above 1000');
    await co2.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(tmpdir(), 'vigil-console-rules.png'), fullPage: true });
    expect((await store().getThresholdOverrides('acme', 'hall_sensor')).get('CO2')?.rules).toEqual([
      { status: 'WARNING', above: 890, forMs: 300_000, description: 'Stuffy' },
    ]);

    // Changed again, from the override's own rules.
    await co2.getByRole('link', { name: 'Edit override' }).click();
    expect(await page.getByLabel('Value of rule 1').inputValue()).toBe('890');
    await page.getByLabel('Value of rule 1').fill('850');
    await page.getByRole('button', { name: 'Save override' }).click();
    await page.waitForURL(`${base}/console/devices/hall_sensor#device-rules`);
    expect(await co2.locator('.rules').textContent()).toContain('above 850 for 5m — Stuffy');

    // The audit log has both, the second before → after, by ada.
    await page.goto(`${base}/console/manage/audit`);
    const entry = page.locator('#audit-rows tr').first();
    expect(await entry.locator('td[data-label="Who"]').textContent()).toBe('ada');
    expect(await entry.locator('.tag.action').textContent()).toBe('threshold.set');
    expect(await entry.locator('td[data-label="What"] .strong').textContent()).toBe('hall_sensor/CO2');
    expect(await entry.locator('.changes-list li.changed').allTextContents()).toEqual([
      'rules[0].above 890 → 850',
      'revision 1 → 2',
    ]);
    await page.screenshot({
      path: join(SHOTS, 'console-manage-audit.png'),
      fullPage: true,
      animations: 'disabled',
    });
    await page.getByLabel('Action').fill('device');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.waitForURL(/action=device/);
    const actions = await page.locator('#audit-rows .tag.action').allTextContents();
    expect(new Set(actions)).toEqual(new Set(['device.create', 'device.import']));
    await context.close();
  });

  it('shows a viewer no Manage link and no management button, and refuses the pages by URL with 403', async () => {
    const { context, page } = await signedIn('vera');
    expect(await page.locator('.topbar nav a').allTextContents()).toEqual([
      'Fleet',
      'Alarms',
      'Events',
      'Ingestion log',
      'Definitions',
    ]);
    expect(await page.getByRole('link', { name: 'New device' }).count()).toBe(0);
    await page.goto(`${base}/console/devices/hall_sensor`);
    expect(await page.locator('#device-rules tr[data-key="CO2"] .tag-override').textContent()).toBe(
      'Device override',
    );
    for (const name of ['Edit device', 'Delete device', 'Edit override', 'Override', 'Clear override'])
      expect(
        await page
          .getByRole('link', { name, exact: true })
          .or(page.getByRole('button', { name, exact: true }))
          .count(),
        name,
      ).toBe(0);
    for (const path of [
      '/console/manage/devices',
      '/console/manage/devices/new',
      '/console/manage/devices/import',
      '/console/manage/api-keys',
      '/console/manage/users',
      '/console/manage/audit',
      '/console/devices/hall_sensor/rules/CO2',
    ]) {
      const res = await page.goto(`${base}${path}`);
      expect(res?.status(), path).toBe(403);
      expect(await page.locator('.error-code').textContent(), path).toBe('FORBIDDEN');
    }
    await context.close();
  });

  it('fits the navigation with Manage, and the management pages, at 375 px', async () => {
    const { context, page } = await signedIn('ada', { width: 375, height: 800 });
    // The main links keep to one row; Manage moves up beside Sign out, and that row holds too.
    const links = page.locator('.topbar nav a:visible');
    expect(await links.allTextContents()).toEqual([
      'Fleet',
      'Alarms',
      'Events',
      'Ingestion log',
      'Definitions',
    ]);
    const boxes = await Promise.all((await links.all()).map((l) => l.boundingBox()));
    expect(new Set(boxes.map((b) => b?.y)).size, 'rows of links').toBe(1);
    const manage = page.getByRole('link', { name: 'Manage' });
    boxes.push(await manage.boundingBox());
    for (const b of boxes) expect(b && b.x >= 0 && b.x + b.width <= 375, JSON.stringify(b)).toBe(true);
    const [brand, signOut, up] = await Promise.all([
      page.locator('.brand').boundingBox(),
      page.getByRole('button', { name: 'Sign out' }).boundingBox(),
      manage.boundingBox(),
    ]);
    const middle = (b: typeof brand) => (b ? b.y + b.height / 2 : NaN);
    expect(Math.abs(middle(up) - middle(signOut))).toBeLessThan(4);
    expect(Math.abs(middle(up) - middle(brand))).toBeLessThan(8);
    await manage.click();
    await page.waitForURL(`${base}/console/manage/devices`);
    for (const path of [
      '/console/fleet',
      '/console/manage/devices',
      '/console/manage/devices/new',
      '/console/manage/devices/import',
      '/console/manage/api-keys',
      '/console/manage/tokens',
      '/console/manage/users',
      '/console/manage/alerting',
      '/console/manage/audit',
      '/console/devices/hall_sensor',
      '/console/devices/hall_sensor/rules/CO2',
    ]) {
      await page.goto(`${base}${path}`);
      expect(await page.evaluate<number>('document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(
        375,
      );
    }
    await page.goto(`${base}/console/manage/users`);
    await page.screenshot({ path: join(tmpdir(), 'vigil-console-users-375.png'), fullPage: true });
    await page.goto(`${base}/console/devices/hall_sensor`);
    await page.screenshot({ path: join(tmpdir(), 'vigil-console-device-375.png') });
    await page.locator('#device-rules').screenshot({ path: join(tmpdir(), 'vigil-console-rules-375.png') });
    await context.close();
  });
});
