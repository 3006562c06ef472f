/**
 * The web console over plain HTTP (its browser tests are in console-browser.test.ts): where it is
 * served, its sign-in throttle per client address, its session cookie and lifetime, the JSON API
 * beside it unchanged, its icon, and a deleted device's events gone from its event listing.
 */
import { describe, expect, it } from 'vitest';
import { listEvents } from '../../src/events/list-events.ts';
import { processed } from '../support/backfill.ts';
import { eventually } from '../support/eventually.ts';
import { provisionComfort, startPipeline } from '../support/pipeline.ts';
import { startApiHarness } from './api-harness.ts';
import { consoleClient, formToken, signIn, type ConsoleClient } from './console-client.ts';

const PASSWORD = 'correct horse battery';

/** The sign-in form's anti-forgery token. */
const signInToken = async (c: ConsoleClient): Promise<string> => formToken(await c.get('/console/sign-in'));

describe('console over HTTP', () => {
  it('sends / to the console and pages to sign-in, and leaves the JSON API bearer-only', async () => {
    const h = await startApiHarness();
    await h.seedEnvironment('acme');
    const root = await fetch(`${h.baseUrl}/`, { redirect: 'manual' });
    expect([root.status, root.headers.get('location')]).toEqual([302, '/console/']);
    const home = await fetch(`${h.baseUrl}/console/`, { redirect: 'manual' });
    expect([home.status, home.headers.get('location')]).toEqual([302, '/console/sign-in']);
    const fleet = await fetch(`${h.baseUrl}/console/fleet`, { redirect: 'manual' });
    expect([fleet.status, fleet.headers.get('location')]).toEqual([
      303,
      '/console/sign-in?next=%2Fconsole%2Ffleet',
    ]);
    const form = await fetch(`${h.baseUrl}/console/sign-in`);
    const text = await form.text();
    for (const label of ['Environment', 'Username', 'Password', 'Authentication code']) {
      expect(text).toMatch(new RegExp(`<label for="[^"]+">${label}</label>`));
    }
    expect(text).toContain('>Sign in</button>');
    expect(text).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
    const api = await fetch(`${h.baseUrl}/devices/list`);
    expect(api.status).toBe(401);
    expect(((await api.json()) as { error: { code: string } }).error.code).toBe('UNAUTHORIZED');
  });

  it('throttles sign-in attempts per client address with 429 and Retry-After', async () => {
    const h = await startApiHarness({ consoleSignInPerMinute: 3 });
    await h.seedEnvironment('acme');
    await h.admin.createUser('acme', 'alice', PASSWORD);
    const c = consoleClient(h.baseUrl);
    const token = await signInToken(c);
    const attempt = () =>
      c.post('/console/sign-in', { _csrf: token, env: 'acme', username: 'alice', password: 'wrong' });
    for (let i = 0; i < 3; i++) expect((await attempt()).status).toBe(401);
    const throttled = await attempt();
    expect(throttled.status).toBe(429);
    expect(Number(throttled.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await throttled.text()).toContain('Too many sign-in attempts from your address');
    // Even the right password waits: each attempt would cost a password hash.
    const right = await c.post('/console/sign-in', {
      _csrf: token,
      env: 'acme',
      username: 'alice',
      password: PASSWORD,
    });
    expect(right.status).toBe(429);
  });

  it('refuses a sign-in without the form’s token', async () => {
    const h = await startApiHarness();
    await h.seedEnvironment('acme');
    await h.admin.createUser('acme', 'alice', PASSWORD);
    const c = consoleClient(h.baseUrl);
    await signInToken(c);
    const res = await c.post('/console/sign-in', { env: 'acme', username: 'alice', password: PASSWORD });
    expect(res.status).toBe(403);
    expect([...c.jar.keys()]).not.toContain('vigil_session');
  });

  it('behind https: a Secure __Host- session cookie, 60 minutes idle and 12 hours at most', async () => {
    const h = await startApiHarness({ publicUrl: 'https://vigil.example.com' });
    await h.seedEnvironment('acme');
    await h.admin.createUser('acme', 'alice', PASSWORD);
    const c = consoleClient(h.baseUrl, { origin: 'https://vigil.example.com' });
    const token = await signInToken(c);
    const before = Date.now();
    const res = await c.post('/console/sign-in', {
      _csrf: token,
      env: 'acme',
      username: 'alice',
      password: PASSWORD,
    });
    expect([res.status, res.headers.get('location')]).toEqual([303, '/console/fleet']);
    const set = res.headers.getSetCookie().find((l) => l.startsWith('__Host-vigil_session='));
    expect(set).toBeDefined();
    expect(set).toMatch(/; Path=\//);
    expect(set).toMatch(/; HttpOnly/);
    expect(set).toMatch(/; Secure/);
    expect(set).toMatch(/; SameSite=Strict/);
    expect(set).not.toMatch(/Max-Age|Expires/);

    const [sessionKey] = await h.redis.keys(`${h.config.keyPrefix}:env:acme:console-session:*`);
    expect(sessionKey).toBeDefined();
    const ttl = await h.redis.pttl(sessionKey!);
    expect(ttl).toBeGreaterThan(59 * 60_000);
    expect(ttl).toBeLessThanOrEqual(60 * 60_000);
    const stored = await h.redis.hgetall(sessionKey!);
    expect(Number(stored.endMs) - Number(stored.createdMs)).toBe(12 * 3_600_000);
    expect(Number(stored.createdMs)).toBeGreaterThanOrEqual(before);
    expect((await c.get('/console/fleet')).status).toBe(200);

    // Past its end, whatever its use, the session is gone.
    await h.redis.hset(sessionKey!, 'endMs', String(Date.now() - 1));
    const ended = await c.get('/console/fleet');
    expect([ended.status, ended.headers.get('location')]).toEqual([
      303,
      '/console/sign-in?next=%2Fconsole%2Ffleet',
    ]);
  });

  it('lists no event of a deleted device, as deleting it promises', async () => {
    const p = await startPipeline({ consoleLiveMs: 200 });
    const { key } = await provisionComfort(p, 'acme', ['kept', 'gone']);
    await p.admin.createUser('acme', 'olga', PASSWORD);
    for (const deviceName of ['kept', 'gone']) {
      const res = await p.post('gateway/submit', key, JSON.stringify({ deviceName, Temperature: 31 }));
      expect(res.status).toBe(202);
    }
    await processed(p);
    const devicesWithEvents = async () =>
      new Set((await listEvents(p.redis, p.keys, { env: 'acme', limit: 100 })).map((e) => e.deviceName));
    expect(await devicesWithEvents()).toEqual(new Set(['kept', 'gone']));

    await p.admin.deleteDevice('acme', 'gone');
    expect(await devicesWithEvents()).toEqual(new Set(['kept']));
    const c = consoleClient(p.apiUrl);
    await signIn(c, 'acme', 'olga', PASSWORD);
    const page = await eventually(async () => (await c.get('/console/events')).text(), {
      until: (html) => html.includes('href="/console/devices/kept"'),
      message: 'the events page',
    });
    expect(page).not.toContain('/console/devices/gone');
  });

  it('serves an icon at /favicon.ico and names it in its pages, from its own origin', async () => {
    const h = await startApiHarness();
    const ico = await fetch(`${h.baseUrl}/favicon.ico`);
    expect(ico.status).toBe(200);
    expect(ico.headers.get('content-type')).toBe('image/x-icon');
    // An ICO file's header: reserved 0, type 1 (icon).
    expect([...new Uint8Array(await ico.arrayBuffer()).subarray(0, 4)]).toEqual([0, 0, 1, 0]);

    const signInPage = await fetch(`${h.baseUrl}/console/sign-in`);
    const csp = signInPage.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("img-src 'self';");
    expect(csp).not.toMatch(/data:|https?:/);
    const href = /<link rel="icon" href="([^"]+)"/.exec(await signInPage.text())?.[1];
    expect(href).toMatch(/^\/console\/assets\/favicon\.svg\?v=/);
    const svg = await fetch(`${h.baseUrl}${href}`);
    expect([svg.status, svg.headers.get('content-type')]).toEqual([200, 'image/svg+xml']);
    expect(await svg.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  });
});
