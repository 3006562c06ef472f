/**
 * The definition editor in a real browser (Debian's Chromium driven by playwright-core) against a
 * whole running Vigil on real Redis and InfluxDB: CodeMirror's two editors (highlighting, line
 * numbers), a draft checked as it is typed (the problem marked at its line), the parser edited,
 * Run (its error line marked), Replay (the diff, a row opened to then and now), Publish — a payload
 * posted to the gateway after that is processed by the new version — and Roll back, after which
 * the next payload is processed by the old one. Operators run and replay but change nothing;
 * viewers read. No CSP violation on the way. With VIGIL_UPDATE_SCREENSHOTS=1 the editor's
 * screenshot goes to docs/images/console-editor.png.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil, type RunningVigil } from '../../src/main.ts';
import { closeRedis, connectRedis, type Redis } from '../../src/redis/connect.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import { launchChromium, openSignedIn } from '../support/browser.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

const PASSWORD = 'correct horse battery';
const SHOTS =
  process.env.VIGIL_UPDATE_SCREENSHOTS === '1'
    ? join(import.meta.dirname, '..', '..', 'docs', 'images')
    : mkdtempSync(join(tmpdir(), 'vigil-shots-'));

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
const PUBLISHED = `function parsePayload(payloadStr) {
  const j = JSON.parse(payloadStr);
  return { Temperature: j.t };
}
`;
/** The new version: doubles the reading, and throws on line 3 above 30. */
const DOUBLES = `function parsePayload(payloadStr) {
  const j = JSON.parse(payloadStr);
  if (j.t > 30) throw new Error('sensor fault at ' + j.t);
  return { Temperature: j.t * 2 };
}
`;

let vigil: RunningVigil;
let redis: Redis;
let browser: Browser;
let base: string;
let gateway: string;
let apiKey: string;
let token: string;
const keys = () => createKeys(vigil.config.keyPrefix);
const admin = () => createTenancyAdmin(adminDeps(redis, keys()));

/** Payloads accepted so far: each has one entry in the ingestion log once the worker's step is done. */
let submitted = 0;

async function submit(body: Record<string, unknown>): Promise<void> {
  const res = await fetch(`${gateway}/gateway/submit/${apiKey}`, {
    method: 'POST',
    body: JSON.stringify(body),
    headers: { 'content-type': 'application/json' },
  });
  expect(res.status).toBe(202);
  submitted += 1;
}

/** The device's Temperature as the read API serves it. */
async function temperature(device: string): Promise<unknown> {
  const res = await fetch(`${base}/sensors/list?deviceName=${device}`, {
    headers: { authorization: `Bearer ${token}` },
  });
  const body = (await res.json()) as { data?: { sensorName: string; rawValue: unknown }[] };
  return body.data?.find((s) => s.sensorName === 'Temperature')?.rawValue;
}

/** Signs in and opens the Freezer's editor, waiting for CodeMirror to be in place. */
async function openEditor(context: BrowserContext, username: string, query = ''): Promise<Page> {
  const page = await openSignedIn(context, base, { env: 'acme', username, password: PASSWORD });
  await page.goto(`${base}/console/definitions/private/Freezer${query}`);
  await page.waitForSelector('body[data-editor="ready"]');
  return page;
}

/** Replaces the text of the editor `which` (0: YAML, 1: parser) as a person would: select all, paste. */
async function replaceText(page: Page, which: 0 | 1, text: string): Promise<void> {
  const content = page.locator('.code-editor .cm-content').nth(which);
  await content.click();
  await page.keyboard.press('Control+A');
  await page.keyboard.press('Delete');
  // Pasted, so that the editor's auto-indentation does not add to the text's own (a string: the
  // test project has no DOM types; the page runs it as it is).
  await page.evaluate(`(() => {
    const host = document.querySelectorAll('.code-editor-host')[${which}];
    const target = host.shadowRoot.querySelector('.cm-content');
    const data = new DataTransfer();
    data.setData('text/plain', ${JSON.stringify(text)});
    target.dispatchEvent(new ClipboardEvent('paste', { clipboardData: data, bubbles: true, cancelable: true }));
  })()`);
}

/** What CSP refused on a page: collected from its console. */
function cspViolations(page: Page): string[] {
  const seen: string[] = [];
  page.on('console', (m) => {
    if (/Content Security Policy|Refused to/i.test(m.text())) seen.push(m.text());
  });
  page.on('pageerror', (e) => seen.push(e.message));
  return seen;
}

beforeAll(async () => {
  const config = testConfig({ mqttEnabled: false, consoleSignInPerMinute: 1000 });
  vigil = await startVigil(config, createLogger(process.env.VIGIL_TEST_LOG ?? 'silent'));
  redis = connectRedis(config.redisUrl, 'command', 'test');
  base = `http://127.0.0.1:${vigil.ports.api}`;
  gateway = `http://127.0.0.1:${vigil.ports.gateway}`;
  const a = admin();
  await a.createEnvironment('acme', 'en');
  await a.applyDefinition({ kind: 'private', env: 'acme' }, SPEC, PUBLISHED);
  for (const name of ['freezer_1', 'freezer_2']) {
    await a.createDevice('acme', {
      name,
      displayName: name.replace('_', ' '),
      definitionName: 'Freezer',
      definitionIsPublic: false,
    });
  }
  // freezer_2 has its own rules for Temperature: the page says so where devices are chosen.
  await a.setThreshold('acme', 'freezer_2', 'Temperature', [{ status: 'CRITICAL', above: 20 }]);
  apiKey = (await a.createApiKey('acme', 'test')).key;
  token = (await a.createToken('acme', 'test', 0, ['read'])).token;
  await a.createUser('acme', 'ada', PASSWORD, 'admin');
  await a.createUser('acme', 'olga', PASSWORD, 'operator');
  await a.createUser('acme', 'vic', PASSWORD, 'viewer');
  for (const t of [10, 21.4, 31]) await submit({ deviceName: 'freezer_1', t });
  await submit({ deviceName: 'freezer_2', t: 22 });
  await eventually(
    async () =>
      (await redis.llen(keys().recentPayloads('acme', 'freezer_1'))) === 3 &&
      (await redis.llen(keys().recentPayloads('acme', 'freezer_2'))) === 1,
    { message: 'the recent payloads kept' },
  );
  browser = await launchChromium();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  if (redis) await closeRedis(redis);
  await vigil?.close();
});

describe('console definition editor in a browser', () => {
  it(
    'edits the parser, runs it, replays it, publishes it — the next payload is the new version’s — and rolls back',
    { timeout: 120_000 },
    async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
      const page = await openEditor(context, 'ada');
      const violations = cspViolations(page);
      // Two editors, highlighted, with line numbers; the device that overrides is marked.
      expect(await page.locator('.code-editor').count()).toBe(2);
      expect(
        await page
          .locator('.code-editor')
          .nth(1)
          .locator('.cm-gutterElement')
          .filter({ hasText: /^4$/ })
          .count(),
      ).toBe(1);
      expect(
        await page.locator('.code-editor').nth(1).locator('.cm-content span[class]').count(),
      ).toBeGreaterThan(3);
      expect(await page.locator('#wb-device option[value="freezer_2"]').textContent()).toContain(
        'overrides Temperature',
      );

      // A mistake as it is typed: the problem listed with its line, marked in the parser.
      await replaceText(page, 1, 'function parsePayload(s) {\n  return { Temperature: 1 ;\n}\n');
      await eventually(() => page.locator('#editor-problems li').first().textContent(), {
        until: (t) => t !== null && /^Parser line 2/.test(t),
        message: 'the parser’s problem listed',
      });
      expect(
        await page.locator('.code-editor').nth(1).locator('.cm-lintRange-error').count(),
      ).toBeGreaterThan(0);

      // The new parser: Run on a hot payload fails at line 3, marked in the editor.
      await replaceText(page, 1, DOUBLES);
      await eventually(() => page.locator('#editor-check-status').textContent(), {
        until: (t) => t === 'No problems found.',
        message: 'the draft checked clean',
      });
      await page.getByLabel('Payload', { exact: true }).fill('{"t":35}');
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await page.waitForSelector('body[data-editor="ready"]');
      expect(await page.locator('#run-result h3').textContent()).toBe('The parser failed at line 3');
      expect(await page.locator('#run-result .loc code').textContent()).toMatch(/^Freezer\.js:3:\d+$/);
      const marked = page.locator('.code-editor').nth(1).locator('.cm-lintRange-error');
      expect(await marked.count()).toBeGreaterThan(0);
      expect(await marked.first().textContent()).toContain("new Error('sensor fault at '");
      // The draft stayed in the editor across the run.
      expect(await page.locator('#ed-parser').inputValue()).toBe(DOUBLES);

      // A good payload: what Vigil would store.
      await page.getByLabel('Payload', { exact: true }).fill('{"t":12}');
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await page.waitForSelector('body[data-editor="ready"]');
      const row = page.locator('#run-result tr[data-sensor="Temperature"]');
      expect(await row.locator('td[data-label="Current value"]').textContent()).toBe('24.0 °C');

      // Replay over both devices' recent payloads beside the published version.
      await page.getByRole('button', { name: 'Replay', exact: true }).click();
      await page.waitForSelector('body[data-editor="ready"]');
      const replay = page.locator('#replay-result');
      expect(await replay.locator('h3').textContent()).toBe(
        'Replay of 4 recent payloads of 2 devices beside published version 1: 4 would change',
      );
      const counts = async (v: string) => replay.locator(`[data-count="${v}"]`).textContent();
      // 31 now fails; 21.4 doubled warns; 10 doubled is only another value; freezer_2's 22 doubled
      // is CRITICAL by its own rule either way.
      expect([await counts('fails'), await counts('status'), await counts('value')]).toEqual([
        'Would now fail: 1',
        'Status changes: 1',
        'Value changes: 2',
      ]);
      const statusRow = replay.locator('details[data-verdict="status"]');
      await statusRow.locator('summary').click();
      expect(await statusRow.locator('.then-now').isVisible()).toBe(true);
      expect(await statusRow.locator('.then-now > div').first().textContent()).toContain('21.4 °C');
      expect(await statusRow.locator('.then-now > div').nth(1).textContent()).toContain('42.8 °C');
      await page.screenshot({
        path: join(SHOTS, 'console-editor.png'),
        fullPage: true,
        animations: 'disabled',
      });

      // Publish with a note: the next payload is processed by version 2.
      await page.getByLabel(/^Note/).fill('double the reading');
      await page.getByRole('button', { name: 'Publish', exact: true }).click();
      await page.waitForURL(/done=published&v=2/);
      expect(await page.locator('.notice-ok').textContent()).toContain('Published version 2');
      expect(await page.locator('tr[data-version="2"]').textContent()).toContain('double the reading');
      // Kept as typed: the browser's CRLF line ends are not the parser's.
      expect((await admin().getVersion({ kind: 'private', env: 'acme' }, 'Freezer', 2)).parserSource).toBe(
        DOUBLES,
      );
      await submit({ deviceName: 'freezer_1', t: 7 });
      await eventually(() => temperature('freezer_1'), {
        until: (v) => v === 14,
        message: 'version 2’s value',
      });

      // Roll back to version 1: the next payload is processed by it again.
      await page.waitForSelector('body[data-editor="ready"]');
      await page.getByRole('button', { name: 'Roll back to 1' }).click();
      await page.waitForURL(/done=rolled-back&v=1/);
      expect(await page.locator('.notice-ok').textContent()).toContain('Rolled back to version 1');
      expect(await page.locator('tr[data-version="1"] .pill').textContent()).toBe('Published');
      await submit({ deviceName: 'freezer_1', t: 8 });
      await eventually(() => temperature('freezer_1'), {
        until: (v) => v === 8,
        message: 'version 1’s value',
      });
      // The log's entries are written when the step is acknowledged, after the state it wrote.
      const log = await eventually(
        async () =>
          (await (
            await fetch(`${base}/ingest/log`, { headers: { authorization: `Bearer ${token}` } })
          ).json()) as { data: { definitionVersion?: number }[] },
        { until: (l) => l.data.length === submitted, message: 'an ingestion log entry per payload' },
      );
      expect(log.data.slice(0, 2).map((e) => e.definitionVersion)).toEqual([1, 2]);
      // Any version opens in the editor.
      await page.locator('tr[data-version="2"]').getByRole('link', { name: 'View' }).click();
      await page.waitForSelector('body[data-editor="ready"]');
      expect(await page.locator('#yaml-h').textContent()).toContain('version 2');
      expect(await page.locator('#ed-parser').inputValue()).toBe(DOUBLES);
      expect(violations).toEqual([]);
      await context.close();
    },
  );

  it('lets an operator run and replay but not change, and shows a viewer the definition read-only', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const operator = await openEditor(context, 'olga');
    expect(await operator.getByRole('button', { name: 'Run', exact: true }).count()).toBe(1);
    expect(await operator.getByRole('button', { name: 'Replay', exact: true }).count()).toBe(1);
    for (const name of ['Save as draft', 'Publish', /^Roll back/])
      expect(await operator.getByRole('button', { name }).count()).toBe(0);
    expect(await operator.locator('.code-editor .cm-content').first().getAttribute('contenteditable')).toBe(
      'true',
    );
    await context.close();

    const viewerContext = await browser.newContext({ viewport: { width: 1280, height: 1000 } });
    const viewer = await openEditor(viewerContext, 'vic');
    expect(await viewer.locator('main button').count()).toBe(0);
    expect(await viewer.locator('.code-editor .cm-content').first().getAttribute('contenteditable')).toBe(
      'false',
    );
    expect(await viewer.locator('.notice-note').first().textContent()).toContain('viewer');
    await viewerContext.close();
  });
});
