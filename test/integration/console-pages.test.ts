/**
 * The console's pages in a real browser (Debian's Chromium) against a whole Vigil: a definition's
 * rules that wait and its stale rules, the ingestion log in pages with payload previews and display
 * names, the workbench's result table at 1280 px, and the navigation and the acknowledgement form at
 * 375 px.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { COMFORT_PARSER, COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { processed } from '../support/backfill.ts';
import { launchChromium, openSignedIn } from '../support/browser.ts';
import { startPipeline, type Pipeline } from '../support/pipeline.ts';

const PASSWORD = 'correct horse battery';
const HOSTILE = '<img src=x onerror=alert(1)>';

/** ComfortSensors with a door that may stay open 2 minutes and a CO2 reading that goes stale. */
const WAITING_SPEC: DefinitionSpec = {
  ...COMFORT_SPEC,
  name: 'WaitingSensors',
  dataPoints: [
    ...COMFORT_SPEC.dataPoints.map((p) =>
      p.name === 'CO2' ? { ...p, stale: { afterMs: 30 * 60_000, status: 'WARNING' as const } } : p,
    ),
    {
      name: 'Door',
      displayName: 'Door open',
      dataType: 'boolean',
      hysteresis: 0,
      thresholds: [{ status: 'WARNING', equals: true, forMs: 120_000, description: 'Door open too long' }],
    },
  ],
};

let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
}, 120_000);
afterAll(async () => {
  await browser?.close();
});

/** A Vigil with environment acme: devices hall_sensor ("Hall sensor") and server_room, a key, operator olga. */
async function setup() {
  const p = await startPipeline({ consoleLiveMs: 200 });
  await p.admin.createEnvironment('acme', 'en');
  await p.admin.applyDefinition({ kind: 'private', env: 'acme' }, COMFORT_SPEC, COMFORT_PARSER);
  await p.admin.applyDefinition({ kind: 'private', env: 'acme' }, WAITING_SPEC, COMFORT_PARSER);
  for (const [name, displayName] of [
    ['hall_sensor', 'Hall sensor'],
    ['server_room', 'Server room'],
  ] as const)
    await p.admin.createDevice('acme', {
      name,
      displayName,
      definitionName: 'ComfortSensors',
      definitionIsPublic: false,
    });
  await p.admin.createUser('acme', 'olga', PASSWORD);
  const { key } = await p.admin.createApiKey('acme', 'test');
  const send = async (values: Record<string, unknown>) => {
    const res = await p.post('gateway/submit', key, JSON.stringify(values));
    expect(res.status).toBe(202);
  };
  return { p, send };
}

async function signedIn(p: Pipeline, viewport: { width: number; height: number }): Promise<Page> {
  const context = await browser.newContext({ viewport });
  onTestFinished(() => context.close());
  return openSignedIn(context, p.apiUrl, { env: 'acme', username: 'olga', password: PASSWORD });
}

describe('console pages', () => {
  it('shows how long each rule waits and when each data point goes stale', async () => {
    const { p } = await setup();
    const page = await signedIn(p, { width: 1280, height: 1000 });
    await page.goto(`${p.apiUrl}/console/definitions/private/WaitingSensors`);
    const rules = (name: string) =>
      page.locator('table tr').filter({ hasText: name }).locator('td[data-label="Rules"]');
    expect(await rules('Door open').textContent()).toContain(
      'Warning equals true for 2 min — Door open too long',
    );
    expect(await rules('CO2').textContent()).toContain('Warning no value for 30 min');
  });

  it('pages the ingestion log, previews each payload as text and names devices by display name', async () => {
    const { p, send } = await setup();
    await send({ deviceName: 'server_room', Temperature: 20 });
    await send({ deviceName: 'hall_sensor', Temperature: 21 });
    await send({ deviceName: 'hall_sensor', Temperature: 22, note: `${HOSTILE} ${'x'.repeat(300)}` });
    await processed(p);
    const page = await signedIn(p, { width: 1280, height: 1000 });
    await page.goto(`${p.apiUrl}/console/ingestion?limit=2`);
    const rows = page.locator('#ingest-rows li');
    expect(await rows.count()).toBe(2);
    const newest = rows.first();
    expect(await newest.locator('.device a').textContent()).toBe('Hall sensor');
    expect(await newest.locator('.device .mono').textContent()).toBe('hall_sensor');
    const preview = (await newest.locator('.preview').textContent()) ?? '';
    expect(preview).toContain(`"note":"${HOSTILE}`);
    expect(preview.endsWith('…')).toBe(true);
    expect(preview.length).toBeLessThan(160);
    expect(await page.locator('main img').count()).toBe(0);

    await page.getByRole('link', { name: 'Older' }).click();
    await page.waitForURL(/after=/);
    expect(await rows.count()).toBe(1);
    expect(await rows.first().locator('.device a').textContent()).toBe('Server room');
    expect(await rows.first().locator('.preview').textContent()).toBe(
      '{"deviceName":"server_room","Temperature":20}',
    );
    expect(await page.getByRole('link', { name: 'Older' }).count()).toBe(0);
    await page.getByRole('link', { name: 'Newest' }).click();
    await page.waitForURL((url) => !url.search.includes('after='));
    expect(await rows.count()).toBe(2);
  });

  it('shows the workbench result’s every column at 1280 px', async () => {
    const { p, send } = await setup();
    await send({ deviceName: 'hall_sensor', Temperature: 21, Humidity: 40, CO2: 620, Battery: 3100 });
    await processed(p);
    const page = await signedIn(p, { width: 1280, height: 1000 });
    await page.goto(`${p.apiUrl}/console/definitions/private/ComfortSensors?device=hall_sensor`);
    await page.getByRole('button', { name: 'Run', exact: true }).click();
    await page.waitForURL(/ComfortSensors/);
    const wrap = page.locator('#run-result .table-wrap');
    const status = page.locator('#run-result th', { hasText: 'Status' });
    const [wrapBox, statusBox] = [await wrap.boundingBox(), await status.boundingBox()];
    expect(
      statusBox && wrapBox && statusBox.x + statusBox.width - (wrapBox.x + wrapBox.width),
    ).toBeLessThanOrEqual(0);
    const { scrollWidth, clientWidth } = await wrap.evaluate(
      (el: { scrollWidth: number; clientWidth: number }) => ({
        scrollWidth: el.scrollWidth,
        clientWidth: el.clientWidth,
      }),
    );
    expect(scrollWidth).toBeLessThanOrEqual(clientWidth);
  });

  it('keeps the navigation on one row at 375 px', async () => {
    const { p } = await setup();
    const page = await signedIn(p, { width: 375, height: 800 });
    const links = await page.locator('.topbar nav a').all();
    const boxes = await Promise.all(links.map((l) => l.boundingBox()));
    expect(new Set(boxes.map((b) => b?.y)).size, 'rows of links').toBe(1);
    for (const b of boxes) expect(b && b.x >= 0 && b.x + b.width <= 375, JSON.stringify(b)).toBe(true);
  });

  it('shows every table label whole at 375 px', async () => {
    const { p, send } = await setup();
    await send({ deviceName: 'server_room', Temperature: 31.2, Humidity: 35, Battery: 3000 });
    await processed(p);
    const page = await signedIn(p, { width: 375, height: 800 });
    for (const path of [
      '/console/alarms',
      '/console/devices/server_room',
      '/console/events',
      '/console/fleet',
    ]) {
      await page.goto(`${p.apiUrl}${path}`);
      expect(await cutLabels(page), path).toEqual([]);
      expect(await page.evaluate<number>('document.documentElement.scrollWidth'), path).toBeLessThanOrEqual(
        375,
      );
    }
  });
});

/**
 * The labels that narrow tables show before each cell (CSS `::before` with `data-label`) that do not
 * fit their box: each drawn once more in a probe of the same font to measure its whole width.
 */
function cutLabels(page: Page): Promise<string[]> {
  return page.evaluate<string[]>(`(() => {
    const cut = [];
    for (const td of document.querySelectorAll('td[data-label]')) {
      if (td.getClientRects().length === 0) continue;
      const label = getComputedStyle(td, '::before');
      if (label.content === 'none') continue;
      const probe = document.createElement('span');
      probe.textContent = td.dataset.label;
      for (const p of ['fontFamily', 'fontSize', 'fontWeight', 'letterSpacing', 'textTransform'])
        probe.style[p] = label[p];
      probe.style.position = 'absolute';
      probe.style.whiteSpace = 'nowrap';
      document.body.append(probe);
      const needed = probe.getBoundingClientRect().width;
      probe.remove();
      if (needed > parseFloat(label.width) + 0.5) cut.push(td.dataset.label + ': ' + needed + ' > ' + label.width);
    }
    return [...new Set(cut)];
  })()`);
}
