/**
 * A device's console page in a real browser (Debian's Chromium) against a whole Vigil: an alarm
 * that escalates while the page is open keeps one row, a freshly loaded page shows its status and
 * its alarms from one read, a boolean data point gets a step chart, and the charts' time axis fits
 * the history there is.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import { queryRecentValues } from '../../src/history/recent-values.ts';
import { PASS_THROUGH_PARSER } from '../fixtures/definitions/temperature.ts';
import { BACKFILL_PREPARSER, processed, upload } from '../support/backfill.ts';
import { canvasPixels, launchChromium, openSignedIn } from '../support/browser.ts';
import { eventually } from '../support/eventually.ts';
import { startPipeline, type Pipeline } from '../support/pipeline.ts';

const PASSWORD = 'correct horse battery';
/** The colours charts.js draws with: the accent (lines, steps) and the ink (value dots). */
const ACCENT = [36, 87, 214] as const;
const INK = [15, 23, 42] as const;

const DOOR_SPEC: DefinitionSpec = {
  name: 'DoorSensor',
  manufacturer: 'Test',
  version: '1',
  dataPoints: [
    {
      name: 'Open',
      displayName: 'Door open',
      dataType: 'boolean',
      hysteresis: 0,
      thresholds: [{ status: 'WARNING', equals: true, forMs: 120_000, description: 'Door open too long' }],
    },
    {
      name: 'Temperature',
      displayName: 'Temperature',
      dataType: 'temperature',
      hysteresis: 0,
      thresholds: [
        { status: 'WARNING', above: 25 },
        { status: 'CRITICAL', above: 30 },
      ],
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

/** A Vigil with environment acme, device `fridge` (DoorSensor), an API key and operator olga. */
async function setup(overrides: Parameters<typeof startPipeline>[0] = {}) {
  const p = await startPipeline({ consoleLiveMs: 200, ...overrides });
  await p.admin.createEnvironment('acme', 'en');
  await p.admin.applyDefinition({ kind: 'private', env: 'acme' }, DOOR_SPEC, PASS_THROUGH_PARSER);
  await p.admin.createDevice('acme', {
    name: 'fridge',
    displayName: 'Kitchen fridge',
    definitionName: 'DoorSensor',
    definitionIsPublic: false,
  });
  await p.admin.createUser('acme', 'olga', PASSWORD);
  const { key } = await p.admin.createApiKey('acme', 'test');
  const send = async (values: Record<string, unknown>) => {
    const res = await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'fridge', ...values }));
    expect(res.status).toBe(202);
  };
  return { p, key, send };
}

async function signedIn(p: Pipeline, options: { javaScriptEnabled?: boolean } = {}) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 1000 }, ...options });
  onTestFinished(() => context.close());
  return openSignedIn(context, p.apiUrl, { env: 'acme', username: 'olga', password: PASSWORD });
}

describe('a device page', () => {
  it('replaces the row of an alarm that escalates while the page is open, never adding a second', async () => {
    const { p, send } = await setup();
    await send({ Temperature: 26 });
    await processed(p);
    const page = await signedIn(p);
    await page.goto(`${p.apiUrl}/console/devices/fridge`);
    await eventually(() => page.locator('#live-status').getAttribute('data-state'), {
      until: (state) => state === 'on',
      message: 'the page to be live',
    });
    const temperature = page.locator('#device-alarms tr').filter({ hasText: 'Temperature' });
    expect(await temperature.locator('.pill').allTextContents()).toEqual(['Warning']);

    await send({ Temperature: 31 });
    await eventually(
      async () => (await temperature.locator('.pill').allTextContents()).includes('Critical'),
      {
        message: 'the Critical alarm on the open page',
      },
    );
    expect(await temperature.locator('.pill').allTextContents()).toEqual(['Critical']);
    expect(await page.locator('#device-head .pill').first().textContent()).toBe('Critical');
  });

  it('shows its status and its open alarms from one read, however old the alarms listing is', async () => {
    // Pages without script open no live stream: what they show is what the server read for them,
    // and with a long live interval nothing read is renewed by time within the test.
    const { p, send } = await setup({ consoleLiveMs: 60_000 });
    await send({ Temperature: 26 });
    await processed(p);
    const page = await signedIn(p, { javaScriptEnabled: false });
    await page.goto(`${p.apiUrl}/console/alarms`);
    expect(await page.locator('#alarm-rows tr .pill').allTextContents()).toEqual(['Warning']);

    await send({ Temperature: 31 });
    await processed(p);
    await page.goto(`${p.apiUrl}/console/devices/fridge`);
    const head = await page.locator('#device-head .pill').first().textContent();
    const alarms = await page.locator('#device-alarms tr .pill').allTextContents();
    expect({ head, alarms }).toEqual({ head: 'Critical', alarms: ['Critical'] });
  });

  it('draws a boolean data point as steps', async () => {
    const page = await deviceWithHistory();
    const steps = await eventually(() => canvasPixels(page, '.chart-canvas[data-sensor="Open"]', ACCENT), {
      // The chart is drawn again as its history arrives: wait for the drawing with the history.
      until: (px) => px.count > 50 && (px.left ?? 1) < 0.5,
      message: 'the door’s step chart over its history',
    });
    expect(steps.left).toBeLessThan(0.5);
  });

  it('fits the charts’ time axis to the history there is', async () => {
    const page = await deviceWithHistory();
    // A new install's 20 minutes of values: spread over the chart, not a few dots at the right
    // edge of a 24-hour axis.
    const dots = await eventually(
      () => canvasPixels(page, '.chart-canvas[data-sensor="Temperature"]', INK, 30),
      {
        until: (px) => px.count > 10 && (px.left ?? 1) < 0.5,
        message: 'the temperature dots over their history',
      },
    );
    expect(dots.left).toBeLessThan(0.5);
  });
});

/**
 * The fridge's page, open, after the device uploaded what it measured since 10 minutes before this
 * hour began (its first values: a new install), once they are in InfluxDB.
 */
async function deviceWithHistory() {
  const { p, key } = await setup();
  await p.admin.setPreparser('acme', BACKFILL_PREPARSER, true);
  // Across the start of this hour, whatever the time: a closed hour holds the first values, which
  // began after it did (the chart must not reach back to the hour's start or middle).
  const now = Date.now();
  const hour = now - (now % 3_600_000);
  await upload(p, key, 'fridge', [
    { t: hour - 10 * 60_000, p: { Open: 0, Temperature: 20 } },
    { t: hour - 3 * 60_000, p: { Open: 1, Temperature: 21 } },
    { t: now - 60_000, p: { Open: 0, Temperature: 22 } },
  ]);
  await processed(p);
  await eventually(
    async () => {
      const values = await queryRecentValues(p.influx, {
        env: 'acme',
        device: 'fridge',
        sensors: ['Open', 'Temperature'],
        sinceMs: Date.now() - 2 * 3_600_000,
        maxPerSensor: 10,
      });
      return values.get('Open')?.values.length === 3 && values.get('Temperature')?.values.length === 3;
    },
    { message: 'the fridge’s values in InfluxDB' },
  );
  const page = await signedIn(p);
  await page.goto(`${p.apiUrl}/console/devices/fridge`);
  return page;
}
