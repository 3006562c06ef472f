/**
 * How the notifier treats a receiver's answers: 408/429/5xx, timeouts and network errors are
 * retried (429 after its Retry-After, without holding up other channels), other 4xx and redirects
 * fail at once and are kept for `vigil notify failed` / `retry`; every attempt of one notification
 * carries the same webhook-id and is in the delivery log.
 */
import { describe, expect, it } from 'vitest';
import {
  until,
  ALERTING_TEST_CONFIG,
  alertingAdmin,
  emitEvents,
  makeEvent,
  notificationsSettled,
} from '../support/alerting.ts';
import type { AlertingAdmin } from '../../src/alerting/alerting-admin.ts';
import { startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { startHttpReceiver, type HttpReceiver } from '../support/receivers.ts';

async function setUp(receiverCount = 1) {
  const p = await startPipeline({ roles: 'notifier', ...ALERTING_TEST_CONFIG });
  await p.admin.createEnvironment('acme', 'en');
  const admin = alertingAdmin(p);
  const receivers: HttpReceiver[] = [];
  for (let i = 0; i < receiverCount; i++) {
    const r = await startHttpReceiver();
    const { secret } = await admin.createChannel('acme', {
      name: `hook${i}`,
      type: 'webhook',
      url: `${r.url}/hook`,
    });
    r.secrets = [secret ?? ''];
    receivers.push(r);
  }
  await admin.createRoute('acme', { name: 'all', channels: receivers.map((_r, i) => `hook${i}`) });
  return { p, admin, receivers };
}

const settled = (p: Pipeline) =>
  eventually(() => notificationsSettled(p), { timeoutMs: 15_000, message: 'nothing left to deliver' });
const arrived = (r: HttpReceiver, n: number) => until(() => r.accepted().length >= n, `${n} accepted`);

/** The delivery log of acme once it holds `n` attempts: the notifier writes it a moment after them. */
const logged = (admin: AlertingAdmin, n: number) =>
  eventually(
    async () => {
      const log = await admin.listAttempts('acme', 10);
      return log.length >= n ? log : undefined;
    },
    { message: `${n} attempts in the delivery log` },
  );

describe('retries', () => {
  it('delivers on the 4th attempt after three 500s, with one webhook-id, each attempt logged', async () => {
    const { p, admin, receivers } = await setUp();
    const [r] = receivers as [HttpReceiver];
    r.respond = (_req, n) => ({ status: n < 3 ? 500 : 200 });
    await emitEvents(p, [makeEvent('acme')]);
    await arrived(r, 1);
    await settled(p);
    expect(r.requests.map((q) => q.status)).toEqual([500, 500, 500, 200]);
    expect(new Set(r.requests.map((q) => q.headers['webhook-id'])).size).toBe(1);
    expect(r.requests.every((q) => q.verifiedWith === 0)).toBe(true);
    const log = await logged(admin, 4);
    expect(log.map((a) => [a.attempt, a.outcome, a.status])).toEqual([
      [4, 'delivered', 200],
      [3, 'retrying', 500],
      [2, 'retrying', 500],
      [1, 'retrying', 500],
    ]);
    expect(log[0]).toMatchObject({
      channel: 'hook0',
      kind: 'event',
      deviceName: 'device_1',
      sensorName: 'Temperature',
    });
    expect(await admin.listFailed('acme')).toEqual([]);
    const metrics = await (await fetch(`${p.opsUrl}/metrics`)).text();
    expect(metrics).toContain('vigil_notify_deliveries_total{channel_type="webhook",outcome="delivered"} 1');
    expect(metrics).toContain('vigil_notify_deliveries_total{channel_type="webhook",outcome="retrying"} 3');
    expect(metrics).toMatch(/vigil_notify_latency_seconds_count\{channel_type="webhook"\} 1/);
    expect(metrics).toContain('vigil_notify_queue_depth 0');
    expect(metrics).toContain('vigil_notify_failed 0');
  });

  it('fails a 410 at once, lists it with the answer, and `notify retry` delivers it once the receiver is fixed', async () => {
    const { p, admin, receivers } = await setUp();
    const [r] = receivers as [HttpReceiver];
    r.respond = () => ({ status: 410, body: 'gone away' });
    await emitEvents(p, [makeEvent('acme')]);
    const [failed] = await eventually(async () => {
      const list = await admin.listFailed('acme');
      return list.length > 0 ? list : undefined;
    });
    expect(r.requests).toHaveLength(1);
    expect(failed).toMatchObject({ kind: 'event', channel: 'hook0', attempts: 1, deviceName: 'device_1' });
    expect(failed?.lastAnswer).toBe('HTTP 410 gone away');
    expect(failed?.id).toBe(r.requests[0]?.headers['webhook-id']);

    r.respond = () => ({ status: 200 });
    expect(await admin.retryFailed('acme', [failed?.id ?? ''])).toEqual([failed?.id]);
    await arrived(r, 1);
    expect(r.requests[1]?.headers['webhook-id']).toBe(failed?.id);
    expect(await admin.listFailed('acme')).toEqual([]);
    await expect(admin.retryFailed('acme', ['event_nope'])).rejects.toMatchObject({
      code: 'NOTIFICATION_NOT_FOUND',
    });
  });

  it('retries an answer slower than the timeout', async () => {
    const { p, admin, receivers } = await setUp();
    const [r] = receivers as [HttpReceiver];
    r.respond = (_req, n) => (n === 0 ? { status: 200, delayMs: 1500 } : { status: 200 });
    await emitEvents(p, [makeEvent('acme')]);
    await until(() => r.requests.length >= 2, 'a second attempt');
    await settled(p);
    const log = await logged(admin, 2);
    expect(log.map((a) => a.outcome)).toEqual(['delivered', 'retrying']);
    expect(log[1]?.answer).toMatch(/no answer within 1000 ms/);
    expect(r.requests[0]?.headers['webhook-id']).toBe(r.requests[1]?.headers['webhook-id']);
  });

  it('waits for a 429 Retry-After on that notification only; other channels go on', async () => {
    const { p, receivers } = await setUp(2);
    const [slow, other] = receivers as [HttpReceiver, HttpReceiver];
    slow.respond = (_req, n) =>
      n === 0 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 200 };
    await emitEvents(p, [makeEvent('acme')]);
    await arrived(other, 1);
    await arrived(slow, 1);
    const [first, second] = slow.requests;
    expect((second?.atMs ?? 0) - (first?.atMs ?? 0)).toBeGreaterThanOrEqual(1900);
    expect(other.requests[0]?.atMs ?? Infinity).toBeLessThan(second?.atMs ?? 0);
  });

  it('does not follow a redirect: the notification fails, the target gets nothing', async () => {
    const { p, admin, receivers } = await setUp();
    const [r] = receivers as [HttpReceiver];
    const elsewhere = await startHttpReceiver();
    r.respond = () => ({ status: 302, headers: { location: `${elsewhere.url}/stolen` } });
    await emitEvents(p, [makeEvent('acme')]);
    const [failed] = await eventually(async () => {
      const list = await admin.listFailed('acme');
      return list.length > 0 ? list : undefined;
    });
    expect(failed?.lastAnswer).toMatch(/^HTTP 302 redirect to .*\/stolen not followed$/);
    expect(elsewhere.requests).toEqual([]);
    expect(r.requests).toHaveLength(1);
  });
});
