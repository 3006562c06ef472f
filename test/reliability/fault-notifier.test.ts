/**
 * Notifications survive faults: a receiver down for longer than two retry intervals, a notifier
 * SIGKILLed mid-delivery (twice), and Redis killed and restarted. Every (event, channel) arrives
 * at least once, every repeat carries the same webhook-id, and nothing ends as failed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { EventRecord } from '../../src/domain/types.ts';
import { startRedis } from '../../scripts/lib/local-services.ts';
import {
  ALERTING_TEST_CONFIG,
  alertingAdmin,
  emitEvents,
  makeEvent,
  notificationsSettled,
  until,
  verifyingWebhook,
} from '../support/alerting.ts';
import { startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import type { HttpReceiver } from '../support/receivers.ts';
import { spawnVigil } from '../support/workers.ts';

/** Retries spread over ~20 s (long enough to outlast each fault), and no flood control. */
const FAULT_CONFIG = {
  ...ALERTING_TEST_CONFIG,
  notifyRetrySchedule: '300ms,600ms,1s,2s,3s,5s,8s',
  notifyDigestThreshold: 1000,
};

async function setUp(p: Pipeline) {
  await p.admin.createEnvironment('acme', 'en');
  const admin = alertingAdmin(p);
  const receiver = await verifyingWebhook(admin, 'acme', { path: '/in' });
  await admin.createRoute('acme', { name: 'all', channels: ['hook'] });
  return { admin, receiver };
}

/** Every event arrived (at least once), verified, and every repeat of one has the same webhook-id. */
function expectEveryEventOnce(receiver: HttpReceiver, events: EventRecord[]) {
  const byEvent = new Map<string, Set<string>>();
  for (const r of receiver.requests) {
    expect(r.verifiedWith).toBe(0);
    const data = (r.json as { data: { deviceName: string } }).data;
    const ids = byEvent.get(data.deviceName) ?? new Set<string>();
    ids.add(String(r.headers['webhook-id']));
    byEvent.set(data.deviceName, ids);
  }
  const delivered = new Set(
    receiver.accepted().map((r) => (r.json as { data: { deviceName: string } }).data.deviceName),
  );
  expect([...delivered].sort()).toEqual(events.map((e) => e.deviceName).sort());
  for (const [device, ids] of byEvent) expect([device, ids.size]).toEqual([device, 1]);
}

const eventsFor = (n: number) =>
  Array.from({ length: n }, (_v, i) => makeEvent('acme', { deviceName: `dev-${i}` }));

describe('notification faults', () => {
  it('delivers everything once a receiver that was down for longer than two retry intervals comes back', async () => {
    const p = await startPipeline({
      roles: 'notifier',
      ...FAULT_CONFIG,
    });
    const { admin, receiver } = await setUp(p);
    await receiver.stop();
    const events = eventsFor(5);
    await emitEvents(p, events);
    await eventually(
      async () => {
        const attempts = await admin.listAttempts('acme', 100);
        return attempts.filter((a) => a.outcome === 'retrying' && a.attempt >= 3).length >= 5
          ? true
          : undefined;
      },
      { timeoutMs: 20_000, message: 'three failed attempts of each notification' },
    );
    await receiver.start();
    await until(() => receiver.accepted().length >= 5, 'all five after the receiver is back', 30_000);
    await eventually(() => notificationsSettled(p), {
      timeoutMs: 20_000,
      message: 'nothing left to deliver',
    });
    expectEveryEventOnce(receiver, events);
    expect(await admin.listFailed('acme')).toEqual([]);
  });

  it(
    'delivers everything when the notifier is SIGKILLed mid-delivery, twice',
    { timeout: 120_000 },
    async () => {
      const p = await startPipeline({ roles: 'api', ...FAULT_CONFIG });
      const { admin, receiver } = await setUp(p);
      // Slow answers keep deliveries in flight when the notifier dies.
      receiver.respond = () => ({ status: 200, delayMs: 400 });
      const notifier = () => spawnVigil(p.config, { VIGIL_ROLES: 'notifier', VIGIL_LOG_LEVEL: 'error' });
      const events = eventsFor(30);
      let child = notifier();
      await emitEvents(p, events);
      for (const kill of [1, 2]) {
        const seen = receiver.requests.length;
        await until(
          () => receiver.requests.length > seen,
          `deliveries in flight before kill ${kill}`,
          30_000,
        );
        await child.kill('SIGKILL');
        child = notifier();
      }
      await until(
        () => new Set(receiver.accepted().map((r) => r.headers['webhook-id'])).size >= 30,
        'all 30',
        60_000,
      );
      await eventually(() => notificationsSettled(p), {
        timeoutMs: 30_000,
        message: 'nothing left to deliver',
      });
      expectEveryEventOnce(receiver, events);
      expect(await admin.listFailed('acme')).toEqual([]);
      await child.kill('SIGTERM');
    },
  );

  it(
    'delivers everything when Redis is killed and restarted mid-delivery',
    { timeout: 120_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'vigil-notify-redis-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const redis = await startRedis({ dataDir: dir, appendfsync: 'always' });
      onTestFinished(() => redis.stop());
      const p = await startPipeline({
        roles: 'notifier',
        ...FAULT_CONFIG,
        redisUrl: redis.url,
      });
      const { admin, receiver } = await setUp(p);
      receiver.respond = () => ({ status: 200, delayMs: 300 });
      const events = eventsFor(20);
      await emitEvents(p, events);
      await until(() => receiver.requests.length >= 1, 'deliveries in flight');
      await redis.kill();
      expect(receiver.accepted().length).toBeLessThan(20); // killed mid-delivery
      await redis.restart();
      await until(
        () => new Set(receiver.accepted().map((r) => r.headers['webhook-id'])).size >= 20,
        'all 20',
        60_000,
      );
      await eventually(() => notificationsSettled(p), {
        timeoutMs: 30_000,
        message: 'nothing left to deliver',
      });
      expectEveryEventOnce(receiver, events);
      expect(await admin.listFailed('acme')).toEqual([]);
    },
  );
});
