/**
 * Which notifications go where and when: environments never see each other's events, flood
 * control turns the rest of a busy window into one digest, quiet hours hold a route's
 * notifications until one digest when they end, signing secrets rotate with a grace period, and
 * the SSRF guard refuses internal addresses at creation and again at delivery.
 */
import { Queue } from 'bullmq';
import { describe, expect, it, onTestFinished } from 'vitest';
import { NOTIFICATION_QUEUE } from '../../src/alerting/notification.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import {
  ALERTING_TEST_CONFIG,
  alertingAdmin,
  emitEvents,
  eventsRouted,
  makeEvent,
  notificationsSettled,
  until,
  verifyingWebhook,
} from '../support/alerting.ts';
import { provisionComfort, startPipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { startHttpReceiver, type HttpReceiver } from '../support/receivers.ts';

interface Body {
  type: string;
  environment: string;
  data: { deviceName?: string; count?: number; events?: { deviceName: string }[] };
}
/**
 * The notifications a receiver accepted, one body each. Delivery is at least once: a delivery the
 * notifier could not see answered in time (a loaded host) comes again with the same webhook-id,
 * which is what receivers deduplicate on.
 */
const bodies = (r: HttpReceiver): Body[] => {
  const byId = new Map<string, Body>();
  for (const q of r.accepted()) {
    const id = String(q.headers['webhook-id']);
    if (!byId.has(id)) byId.set(id, q.json as Body);
  }
  return [...byId.values()];
};

/**
 * Longer than routing 1,000 events can take on a loaded machine, and than the test's own timeout:
 * all of them fall in one window however slow the host.
 */
const FLOOD_WINDOW_MS = 10 * 60_000;

/** The first request of each notification (webhook-id), in the order they came. */
const messages = (r: HttpReceiver) => {
  const seen = new Set<string>();
  return r.requests.filter((q) => {
    const id = String(q.headers['webhook-id']);
    if (seen.has(id)) return false;
    seen.add(id);
    return true;
  });
};

/** `HH:MM:SS` of an instant in UTC. */
const clockUtc = (ms: number) => new Date(ms).toISOString().slice(11, 19);

describe('routing', () => {
  it("never sends one environment's events to another's channels", async () => {
    const p = await startPipeline({ roles: 'gateway,worker,notifier', ...ALERTING_TEST_CONFIG });
    const admin = alertingAdmin(p);
    const keys: Record<string, string> = {};
    const receivers = { a: await startHttpReceiver(), b: await startHttpReceiver() };
    for (const env of ['a', 'b'] as const) {
      keys[env] = (await provisionComfort(p, env, [`${env}-dev`, 'shared-name'])).key;
      const { secret } = await admin.createChannel(env, {
        name: 'hook',
        type: 'webhook',
        url: receivers[env].url,
      });
      receivers[env].secrets = [secret ?? ''];
      await admin.createRoute(env, { name: 'all', channels: ['hook'], includeSuccess: true });
    }
    for (const env of ['a', 'b'] as const) {
      for (const device of [`${env}-dev`, 'shared-name']) {
        const res = await p.post(
          'gateway/submit',
          keys[env] ?? '',
          JSON.stringify({ deviceName: device, Temperature: 26 }),
        );
        expect(res.status).toBe(202);
      }
    }
    await until(
      () => receivers.a.accepted().length >= 2 && receivers.b.accepted().length >= 2,
      'both environments',
    );
    await eventually(() => notificationsSettled(p), {
      timeoutMs: 10_000,
      message: 'nothing left to deliver',
    });
    for (const env of ['a', 'b'] as const) {
      const got = bodies(receivers[env]);
      expect(got.map((b) => b.environment)).toEqual([env, env]);
      expect(got.map((b) => b.data.deviceName).sort()).toEqual([`${env}-dev`, 'shared-name'].sort());
      expect(receivers[env].requests.every((r) => r.verifiedWith === 0)).toBe(true);
    }
  });

  it('sends at most 21 messages for 1,000 events in one window: 20, then one digest counting the rest', async () => {
    const p = await startPipeline({
      roles: 'notifier',
      ...ALERTING_TEST_CONFIG,
      notifyFloodWindowMs: FLOOD_WINDOW_MS,
    });
    await p.admin.createEnvironment('acme', 'en');
    const admin = alertingAdmin(p);
    const r = await verifyingWebhook(admin, 'acme');
    await admin.createRoute('acme', { name: 'all', channels: ['hook'] });
    const events = Array.from({ length: 1000 }, (_v, i) => makeEvent('acme', { deviceName: `dev-${i}` }));
    const emittedMs = Date.now();
    await emitEvents(p, events);
    await eventually(() => eventsRouted(p), { timeoutMs: 30_000, message: 'every event routed' });
    // The window opened after `emittedMs`: every event was counted in it.
    expect(Date.now() - emittedMs, 'routing took longer than the flood window').toBeLessThan(FLOOD_WINDOW_MS);
    // Its digest waits for the window to end; the test ends it now rather than wait.
    const queue = new Queue(NOTIFICATION_QUEUE, { connection: p.redis, prefix: p.keys.bullPrefix() });
    onTestFinished(() => queue.close());
    const delayed = await queue.getDelayed();
    expect(delayed.map((j) => j.name)).toEqual(['digest']);
    await delayed[0]?.promote();
    await until(() => bodies(r).some((b) => b.type === 'digest'), 'the digest');
    await eventually(() => notificationsSettled(p), {
      timeoutMs: 10_000,
      message: 'nothing left to deliver',
    });
    const got = bodies(r);
    expect(new Set(r.requests.map((q) => q.headers['webhook-id'])).size).toBeLessThanOrEqual(21);
    expect(got.filter((b) => b.type === 'event')).toHaveLength(20);
    const digest = got.find((b) => b.type === 'digest');
    expect(digest?.data.count).toBe(980);
    expect(digest?.data.events).toHaveLength(100);
    expect(digest?.data.events?.at(-1)?.deviceName).toBe('dev-999');
    expect(r.requests.every((q) => q.verifiedWith === 0)).toBe(true);
  });

  it('holds notifications during quiet hours and sends one digest when they end', async () => {
    const p = await startPipeline({ roles: 'notifier', ...ALERTING_TEST_CONFIG });
    await p.admin.createEnvironment('acme', 'en');
    const admin = alertingAdmin(p);
    const r = await startHttpReceiver();
    await admin.createChannel('acme', { name: 'hook', type: 'webhook', url: r.url });
    const startMs = Math.floor(Date.now() / 1000) * 1000 - 1000;
    const endMs = startMs + 4000;
    await admin.createRoute('acme', {
      name: 'night',
      channels: ['hook'],
      quietHours: `${clockUtc(startMs)}-${clockUtc(endMs)}`,
      timeZone: 'UTC',
    });
    await emitEvents(
      p,
      Array.from({ length: 5 }, (_v, i) => makeEvent('acme', { deviceName: `dev-${i}` })),
    );
    await until(() => r.requests.length >= 1, 'the digest');
    expect(r.requests[0]?.atMs).toBeGreaterThanOrEqual(endMs);
    await emitEvents(p, [makeEvent('acme', { deviceName: 'after' })]);
    await until(() => r.requests.length >= 2, 'the event after quiet hours');
    await eventually(() => notificationsSettled(p), {
      timeoutMs: 10_000,
      message: 'nothing left to deliver',
    });
    expect(bodies(r).map((b) => [b.type, b.data.count ?? b.data.deviceName])).toEqual([
      ['digest', 5],
      ['event', 'after'],
    ]);
  });

  it('signs with both secrets during the grace period of a rotation, then with the new one only', async () => {
    const p = await startPipeline({ roles: 'notifier', ...ALERTING_TEST_CONFIG });
    await p.admin.createEnvironment('acme', 'en');
    const admin = alertingAdmin(p);
    const r = await startHttpReceiver();
    const created = await admin.createChannel('acme', { name: 'hook', type: 'webhook', url: r.url });
    await admin.createRoute('acme', { name: 'all', channels: ['hook'] });
    const rotated = await admin.rotateSecret('acme', 'hook');
    expect(rotated.secret).not.toBe(created.secret);
    r.secrets = [rotated.secret, created.secret ?? ''];
    await emitEvents(p, [makeEvent('acme')]);
    await until(() => messages(r).length >= 1, 'first');
    expect(String(messages(r)[0]?.headers['webhook-signature']).split(' ')).toHaveLength(2);
    expect(messages(r)[0]?.verifiedWith).toBe(0);
    r.secrets = [created.secret ?? ''];
    await emitEvents(p, [makeEvent('acme')]);
    await until(() => messages(r).length >= 2, 'second');
    expect(messages(r)[1]?.verifiedWith).toBe(0); // the old secret still verifies

    const noGrace = alertingAdmin(
      p,
      loadConfig(
        {},
        {
          ...ALERTING_TEST_CONFIG,
          redisUrl: p.config.redisUrl,
          keyPrefix: p.config.keyPrefix,
          notifySecretGraceSeconds: 0,
        },
      ),
    );
    const third = await noGrace.rotateSecret('acme', 'hook');
    r.secrets = [rotated.secret, third.secret];
    await emitEvents(p, [makeEvent('acme')]);
    await until(() => messages(r).length >= 3, 'third');
    expect(String(messages(r)[2]?.headers['webhook-signature']).split(' ')).toHaveLength(1);
    expect(messages(r)[2]?.verifiedWith).toBe(1);
  });

  it('refuses loopback, private and link-local URLs at creation unless allowed, and again at delivery', async () => {
    const p = await startPipeline({ roles: 'notifier', ...ALERTING_TEST_CONFIG, notifyAllowedHosts: '' });
    await p.admin.createEnvironment('acme', 'en');
    const strict = alertingAdmin(p);
    for (const url of [
      'http://127.0.0.1:9/hook',
      'http://localhost:9/hook',
      'http://10.0.0.1/hook',
      'http://169.254.169.254/latest/meta-data',
      'http://[::1]/hook',
      'http://[fd00::1]/hook',
      'http://[::ffff:127.0.0.1]/hook',
      'http://192.168.1.10/hook',
    ]) {
      await expect(
        strict.createChannel('acme', { name: 'x', type: 'webhook', url }),
        url,
      ).rejects.toMatchObject({
        code: 'ADDRESS_NOT_ALLOWED',
      });
      await expect(
        strict.createChannel('acme', { name: 'x', type: 'slack', url }),
        url,
      ).rejects.toMatchObject({
        code: 'ADDRESS_NOT_ALLOWED',
      });
    }
    expect(await strict.listChannels('acme')).toEqual([]);

    // Created where the receiver's port is allowed; this notifier allows none: refused at delivery.
    const r = await startHttpReceiver();
    const lenient = alertingAdmin(
      p,
      loadConfig({}, { ...ALERTING_TEST_CONFIG, redisUrl: p.config.redisUrl, keyPrefix: p.config.keyPrefix }),
    );
    await lenient.createChannel('acme', { name: 'hook', type: 'webhook', url: r.url });
    await lenient.createRoute('acme', { name: 'all', channels: ['hook'] });
    await emitEvents(p, [makeEvent('acme')]);
    const [failed] = await eventually(async () => {
      const list = await strict.listFailed('acme');
      return list.length > 0 ? list : undefined;
    });
    expect(failed?.lastAnswer).toMatch(/^not sent: 127\.0\.0\.1 reaches 127\.0\.0\.1 \(loopback\)/);
    expect(r.requests).toEqual([]);
  });

  it('admits an allowed 127.0.0.1:<port> on that port only, at creation and again at delivery', async () => {
    const allowed = await startHttpReceiver({ port: 0 });
    const other = await startHttpReceiver({ port: 0 });
    const only = `127.0.0.1:${allowed.port}`;
    const p = await startPipeline({ roles: 'notifier', ...ALERTING_TEST_CONFIG, notifyAllowedHosts: only });
    await p.admin.createEnvironment('acme', 'en');
    const admin = alertingAdmin(p);
    // Other ports of the allowed host: another receiver, this Vigil's ops port, InfluxDB's query API.
    for (const url of [`${other.url}/hook`, `${p.opsUrl}/metrics`, `${p.config.influxUrl}/query`]) {
      await expect(
        admin.createChannel('acme', { name: 'x', type: 'webhook', url }),
        url,
      ).rejects.toMatchObject({ code: 'ADDRESS_NOT_ALLOWED' });
    }

    // Both created where both ports are allowed; this notifier delivers to its allowed port only.
    const both = `${only},127.0.0.1:${other.port}`;
    const config = { ...ALERTING_TEST_CONFIG, notifyAllowedHosts: both };
    const lenient = alertingAdmin(
      p,
      loadConfig({}, { ...config, redisUrl: p.config.redisUrl, keyPrefix: p.config.keyPrefix }),
    );
    await lenient.createChannel('acme', { name: 'allowed', type: 'webhook', url: `${allowed.url}/hook` });
    await lenient.createChannel('acme', { name: 'other', type: 'webhook', url: `${other.url}/hook` });
    await admin.createRoute('acme', { name: 'all', channels: ['allowed', 'other'] });
    await emitEvents(p, [makeEvent('acme')]);
    await until(() => allowed.accepted().length === 1, 'the allowed port notified');
    const failed = await eventually(async () => {
      const list = await admin.listFailed('acme');
      return list.length > 0 ? list : undefined;
    });
    expect(failed.map((f) => f.channel)).toEqual(['other']);
    expect(other.requests).toEqual([]);
  });

  it('notifies events created while no notifier ran once one starts, but not events from before routes existed', async () => {
    const p = await startPipeline({ roles: 'api', ...ALERTING_TEST_CONFIG });
    await p.admin.createEnvironment('acme', 'en');
    await emitEvents(p, [makeEvent('acme', { deviceName: 'before-routes' })]);
    const admin = alertingAdmin(p);
    const r = await startHttpReceiver();
    await admin.createChannel('acme', { name: 'hook', type: 'webhook', url: r.url });
    await admin.createRoute('acme', { name: 'all', channels: ['hook'] });
    await emitEvents(p, [makeEvent('acme', { deviceName: 'while-down' })]);
    const notifier = await startVigil({ ...p.config, roles: ['notifier'] }, createLogger('silent'));
    onTestFinished(() => notifier.close());
    await until(() => r.requests.length >= 1, 'the event created while no notifier ran');
    await eventually(() => notificationsSettled(p), {
      timeoutMs: 10_000,
      message: 'nothing left to deliver',
    });
    expect(bodies(r).map((b) => b.data.deviceName)).toEqual(['while-down']);
  });

  it("deletes an environment's channels, routes, log and held digests with it", async () => {
    const p = await startPipeline({ roles: 'notifier', ...ALERTING_TEST_CONFIG, notifyDigestThreshold: 1 });
    await p.admin.createEnvironment('acme', 'en');
    const admin = alertingAdmin(p);
    const r = await startHttpReceiver();
    await admin.createChannel('acme', { name: 'hook', type: 'webhook', url: r.url });
    await admin.createRoute('acme', { name: 'all', channels: ['hook'] });
    await emitEvents(p, [makeEvent('acme'), makeEvent('acme'), makeEvent('acme')]);
    await until(() => r.requests.length >= 1, 'the first notification');
    const envKeys = () => p.redis.keys(`${p.config.keyPrefix}:env:acme:*`);
    await eventually(async () =>
      (await envKeys()).some((k) => k.includes(':notify:batch:')) ? true : undefined,
    );
    await p.admin.deleteEnvironment('acme', true);
    expect(await envKeys()).toEqual([]);
  });
});
