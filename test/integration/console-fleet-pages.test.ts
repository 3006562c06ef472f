/**
 * The console's fleet page of 3,000 devices (imported in pipelines) with alarms open: its counts
 * (from the alarm index and the devices never heard from), the most severe devices first and then
 * every other one by name, page by page forwards and back, the label filter and a status filter
 * across pages, a search that stops at its limit and goes on, and a live page that follows a new
 * alarm. A page reads only its devices: the Redis commands a page costs are counted on the console's
 * own connection, and bounded by the page's size, not the fleet's.
 */
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import express from 'express';
import { beforeAll, describe, expect, it } from 'vitest';
import { createConsole } from '../../src/console/console-app.ts';
import { FLEET_ROWS } from '../../src/console/views/fleet-view.ts';
import { createInfluxClient } from '../../src/history/influx-client.ts';
import { createIngestLog } from '../../src/ingest/ingest-log.ts';
import { createLogger } from '../../src/log/logger.ts';
import type { Redis } from '../../src/redis/connect.ts';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import { adminDeps, createKeys, type Keys } from '../../src/keys.ts';
import { startVigil } from '../../src/main.ts';
import { createConnections } from '../../src/redis/connections.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import { COMFORT_PARSER, COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';
import { launchChromium, openSignedIn } from '../support/browser.ts';
import { loseContact } from '../support/contact.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';
import type { Pipeline } from '../support/pipeline.ts';
import { consoleClient, signIn, type ConsoleClient } from './console-client.ts';

const DEVICES = 3000;
const PASSWORD = 'correct horse battery';
const name = (i: number) => `dev-${String(i).padStart(4, '0')}`;
const siteOf = (i: number) => `s${i % 3}`;

/** What the devices were sent: Temperature per device (31 critical, 26 warning, 21 fine). */
const SENT: Record<string, number> = {
  [name(5)]: 31,
  [name(100)]: 31,
  [name(2500)]: 31,
  [name(10)]: 26,
  [name(1500)]: 26,
  [name(20)]: 31, // suppressed below: it counts as fine
  [name(40)]: 21, // then loses contact: ERROR, silent
  ...Object.fromEntries(Array.from({ length: 10 }, (_, i) => [name(30 + i), 21])),
};
/** The devices that need attention, in the page's order. */
const ATTENTION = [name(5), name(100), name(2500), name(40), name(10), name(1500)];

/** Each command sent on `redis` counted (a pipeline's commands one by one). */
function countCommands(redis: Redis): { count: () => number } {
  let n = 0;
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = (...args: Parameters<Redis['sendCommand']>) => {
    n += 1;
    return send(...args);
  };
  return { count: () => n };
}

const rowKeys = (markup: string) => [...markup.matchAll(/<tr data-key="([^"]+)"/g)].map((m) => m[1] ?? '');
const link = (markup: string, rel: 'next' | 'prev') =>
  new RegExp(`rel="${rel}" href="([^"]+)"`).exec(markup)?.[1]?.replaceAll('&amp;', '&');
const count = (markup: string, cls: string) =>
  Number(new RegExp(`class="count ${cls}[^"]*"[^>]*><span class="count-n">(\\d+)</span>`).exec(markup)?.[1]);

let redis: Redis;
let keys: Keys;
let apiUrl: string;
let post: (body: Record<string, unknown>) => Promise<number>;
let c: ConsoleClient;
let commands: () => number;

/** GETs a page of the counted console: its markup and the commands it cost. */
async function fleet(path: string): Promise<{ markup: string; cost: number }> {
  const before = commands();
  const res = await c.get(path);
  expect(res.status).toBe(200);
  const markup = await res.text();
  return { markup, cost: commands() - before };
}

/**
 * Every page from `path` on, following `rel`: the rows of each; each page cost less than `bound`
 * commands (a page's rows cost 3 each: record, state, suppressions).
 */
async function walk(path: string, rel: 'next' | 'prev', bound = 4 * FLEET_ROWS): Promise<string[][]> {
  const pages: string[][] = [];
  let next: string | undefined = path;
  while (next !== undefined) {
    const { markup, cost } = await fleet(next);
    expect(cost, next).toBeLessThan(bound);
    pages.push(rowKeys(markup));
    next = link(markup, rel);
  }
  return pages;
}

beforeAll(async () => {
  const config = testConfig({ mqttEnabled: false, consoleLiveMs: 200 });
  const cleanups: (() => Promise<unknown>)[] = [];
  const vigil = await startVigil(config, createLogger('silent'));
  cleanups.push(() => vigil.close());
  const connections = createConnections(config);
  cleanups.push(() => connections.close());
  redis = connections.command('test');
  keys = createKeys(config.keyPrefix);
  apiUrl = `http://127.0.0.1:${vigil.ports.api}`;
  const admin = createTenancyAdmin(adminDeps(redis, keys));
  await admin.createEnvironment('acme', 'en');
  await admin.applyDefinition({ kind: 'private', env: 'acme' }, COMFORT_SPEC, COMFORT_PARSER);
  await admin.importDevices(
    'acme',
    Array.from({ length: DEVICES }, (_, i) => ({
      input: {
        name: name(i),
        displayName: `Device ${i}`,
        definitionName: 'ComfortSensors',
        definitionIsPublic: false,
        labels: { site: siteOf(i), row: `r${i % 2}` },
      },
      current: null,
    })),
    () => new Set(),
  );
  await admin.createUser('acme', 'olga', PASSWORD);
  const { key } = await admin.createApiKey('acme', 'test');
  post = async (body) => {
    const res = await fetch(`http://127.0.0.1:${vigil.ports.gateway}/gateway/submit/${key}`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { 'content-type': 'application/json' },
    });
    return res.status;
  };
  // dev-0040 first, alone: its contact is lost below, on a clock just past its deadline only.
  expect(await post({ deviceName: name(40), Temperature: 21 })).toBe(202);
  await eventually(
    async () => (await redis.zscore(keys.availabilityDeadlines(), `acme\n${name(40)}`)) !== null,
    {
      message: 'dev-0040 heard from',
    },
  );
  for (const [deviceName, Temperature] of Object.entries(SENT))
    if (deviceName !== name(40)) expect(await post({ deviceName, Temperature })).toBe(202);
  await eventually(async () => (await redis.llen(keys.ingestLog('acme'))) >= Object.keys(SENT).length, {
    message: 'every payload processed',
  });
  await admin.suppress('acme', name(20), 'Temperature', 0);
  // loseContact takes what it uses of a test pipeline.
  await loseContact({ redis, keys, config } as Pipeline, 'acme', name(40));

  // A console of its own on a connection whose commands are counted, reading afresh every time
  // (its shared reads last a millisecond).
  const counted = connections.command('counted-console');
  commands = countCommands(counted).count;
  const own = { ...config, consoleLiveMs: 1 };
  const webConsole = createConsole({
    config: own,
    keys,
    redis: counted,
    influx: createInfluxClient({ url: own.influxUrl, database: own.influxDatabase }),
    tenancy: createTenancyStore({ redis: counted, keys }),
    ingestLog: createIngestLog({ redis: counted, keys, size: own.ingestLogSize }),
    log: createLogger('silent'),
  });
  cleanups.push(() => webConsole.close());
  const server = express().use(webConsole.router).listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', resolve));
  cleanups.push(() => new Promise<void>((resolve) => server.close(() => resolve())));
  c = consoleClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  await signIn(c, 'acme', 'olga', PASSWORD);
  return async () => {
    for (const fn of cleanups.reverse()) await fn();
  };
}, 120_000);

describe('the fleet page of 3,000 devices', () => {
  it('counts statuses from the open alarms, and lists the most severe devices first at a page’s cost', async () => {
    const { markup, cost } = await fleet('/console/fleet');
    // Reading every device would cost 3 commands each: 9,000.
    expect(cost).toBeLessThan(4 * FLEET_ROWS);
    expect(markup).toContain('<span id="fleet-total">3000 devices</span>');
    expect(
      ['st-critical', 'st-error', 'st-warning', 'st-info', 'st-ok', 'st-silent', 'st-none'].map((k) =>
        count(markup, k),
      ),
    ).toEqual([3, 1, 2, 0, 11, 1, DEVICES - 17]);
    const rows = rowKeys(markup);
    expect(rows).toHaveLength(FLEET_ROWS);
    expect(rows.slice(0, ATTENTION.length)).toEqual(ATTENTION);
    // Then the others by name: the suppressed one among them.
    const others = Array.from({ length: 120 }, (_, i) => name(i)).filter((n) => !ATTENTION.includes(n));
    expect(rows.slice(ATTENTION.length)).toEqual(others.slice(0, FLEET_ROWS - ATTENTION.length));
    expect(markup).toMatch(
      /<tr data-key="dev-0020"[^>]*>\s*<td data-label="Status"><span class="stack"><span class="pill st-ok/,
    );
    expect(markup).toContain('Showing the first 100 of 3000 devices, most severe first');
  });

  it('pages through every device once, and back through the same pages', async () => {
    const forwards = await walk('/console/fleet', 'next');
    expect(forwards).toHaveLength(DEVICES / FLEET_ROWS);
    const all = forwards.flat();
    expect(all.slice(0, ATTENTION.length)).toEqual(ATTENTION);
    expect(new Set(all).size).toBe(DEVICES);
    const last = forwards.at(-1) ?? [];
    const lastPath = `/console/fleet?after=${encodeURIComponent(forwards.at(-2)?.at(-1) ?? '')}`;
    const { markup } = await fleet(lastPath);
    expect(rowKeys(markup)).toEqual(last);
    expect(link(markup, 'next')).toBeUndefined();
    const backwards = await walk(link(markup, 'prev') ?? '', 'prev');
    expect([...backwards.reverse(), last]).toEqual(forwards);
  });

  it('filters by a label across pages, the most severe of them first', async () => {
    const pages = await walk('/console/fleet?labels=site%3Ds1', 'next');
    const all = pages.flat();
    expect(all).toHaveLength(DEVICES / 3);
    expect(all.every((n) => Number(n.slice(4)) % 3 === 1)).toBe(true);
    expect(all.slice(0, 4)).toEqual([name(100), name(2500), name(40), name(10)]);
    // Two labels: the first from its index, the second checked on the records, which costs a page
    // the records of twice its devices (half of those of s1 are in row r0).
    const both = (await walk('/console/fleet?labels=site%3Ds1%3Brow%3Dr1', 'next', 5 * FLEET_ROWS)).flat();
    expect(both).toHaveLength(DEVICES / 6);
    expect(both.every((n) => Number(n.slice(4)) % 6 === 1)).toBe(true);
  });

  it('lists a status across pages: the critical ones, and those never heard from', async () => {
    const critical = await fleet('/console/fleet?status=CRITICAL');
    expect(rowKeys(critical.markup)).toEqual([name(5), name(100), name(2500)]);
    const fine = await fleet('/console/fleet?status=SUCCESS');
    expect(rowKeys(fine.markup)).toEqual([name(20), ...Array.from({ length: 10 }, (_, i) => name(30 + i))]);
    const unheard = (await walk('/console/fleet?status=NO_DATA', 'next')).flat();
    expect(unheard).toHaveLength(DEVICES - 17);
    expect(unheard.some((n) => n in SENT)).toBe(false);
  });

  it('searches at most 2,000 devices a page, says so, and goes on from there', async () => {
    const { markup, cost } = await fleet('/console/fleet?q=dev-25');
    expect(rowKeys(markup)).toEqual([name(2500)]);
    expect(markup).toContain('searched as far as <span class="mono">dev-1999</span>');
    expect(cost).toBeLessThan(2100 + 4 * FLEET_ROWS);
    const next = await fleet(link(markup, 'next') ?? '');
    expect(rowKeys(next.markup)).toEqual(Array.from({ length: 99 }, (_, i) => name(2501 + i)));
    expect(link(next.markup, 'next')).toBeUndefined();
  });

  it('updates an open page when a device raises an alarm', async () => {
    const live = consoleClient(apiUrl);
    await signIn(live, 'acme', 'olga', PASSWORD);
    const page = await (await live.get('/console/fleet')).text();
    const url = /data-live="\/console\/live\?([^"]+)"/.exec(page)?.[1]?.replaceAll('&amp;', '&') ?? '';
    const stream = await live.openLive(url);
    try {
      expect(await post({ deviceName: name(1), Temperature: 31 })).toBe(202);
      await eventually(
        () => {
          const updates = stream
            .text()
            .split('\n')
            .filter((l) => l.startsWith('data: {"'))
            .map(
              (l) =>
                JSON.parse(l.slice(6)) as {
                  rows?: Record<string, { order?: string[] }>;
                  html?: Record<string, string>;
                },
            );
          const order = updates
            .flatMap((u) => (u.rows?.['fleet-rows']?.order ? [u.rows['fleet-rows'].order] : []))
            .at(-1);
          const counts = updates
            .flatMap((u) => (u.html?.['fleet-summary'] ? [u.html['fleet-summary']] : []))
            .at(-1);
          return (
            order?.slice(0, 4).join() === [name(1), name(5), name(100), name(2500)].join() &&
            count(counts ?? '', 'st-critical') === 4
          );
        },
        { message: 'the live page to list dev-0001 first and count 4 critical' },
      );
    } finally {
      await stream.close();
    }
  });

  it('shows a page in Chromium, and moves to the next page and back', async () => {
    const browser = await launchChromium();
    try {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const page = await openSignedIn(context, apiUrl, { env: 'acme', username: 'olga', password: PASSWORD });
      const rows = page.locator('#fleet-rows tr');
      expect(await rows.count()).toBe(FLEET_ROWS);
      expect(await page.locator('.count.st-critical .count-n').textContent()).toBe('4');
      expect(await rows.first().getAttribute('data-key')).toBe(name(1));
      await page.screenshot({ path: join(tmpdir(), 'vigil-console-fleet-3000.png') });
      await page.getByRole('link', { name: 'Next' }).click();
      await page.waitForURL(/after=/);
      expect(await rows.count()).toBe(FLEET_ROWS);
      const second = await rows.first().getAttribute('data-key');
      await page.locator('#fleet-pager').scrollIntoViewIfNeeded();
      await page.screenshot({ path: join(tmpdir(), 'vigil-console-fleet-3000-page-2.png') });
      await page.getByRole('link', { name: 'Previous' }).click();
      await page.waitForURL(/before=/);
      expect(await rows.first().getAttribute('data-key')).toBe(name(1));
      await page.getByRole('link', { name: 'Next' }).click();
      await page.waitForURL(/after=/);
      expect(await rows.first().getAttribute('data-key')).toBe(second);
      await context.close();
    } finally {
      await browser.close();
    }
  });
});
