/**
 * Notifications survive faults: a receiver down for longer than two retry intervals, a notifier
 * SIGKILLed mid-delivery (twice), and Redis killed and restarted mid-delivery. Every (event,
 * channel) arrives at least once, every repeat carries the same webhook-id, and nothing ends as
 * failed. Each fault is injected while the receiver holds answers back (holdAnswersAfter), so it
 * finds a known number of notifications delivered and the rest in flight on any machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { EventRecord } from '../../src/domain/types.ts';
import { startRedis, type LocalService } from '../../scripts/lib/local-services.ts';
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
import { holdAnswersAfter, type HttpReceiver } from '../support/receivers.ts';
import { spawnVigil } from '../support/workers.ts';

/** Retries spread over ~20 s (long enough to outlast each fault), and no flood control. */
const FAULT_CONFIG = {
  ...ALERTING_TEST_CONFIG,
  notifyRetrySchedule: '300ms,600ms,1s,2s,3s,5s,8s',
  notifyDigestThreshold: 1000,
};

/** Answers each notifier gets before the rest of its deliveries are held in flight. */
const ANSWERED_BEFORE_FAULT = 5;

async function setUp(p: Pipeline) {
  await p.admin.createEnvironment('acme', 'en');
  const admin = alertingAdmin(p);
  const receiver = await verifyingWebhook(admin, 'acme', { path: '/in' });
  await admin.createRoute('acme', { name: 'all', channels: ['hook'] });
  return { admin, receiver };
}

/** A Redis of the test's own, with every write on disk before it is answered. */
async function privateRedis(): Promise<LocalService> {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-notify-redis-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const redis = await startRedis({ dataDir: dir, appendfsync: 'always' });
  onTestFinished(() => redis.stop());
  return redis;
}

/**
 * Every event was delivered (answered 2xx at least once), every request verified, and all
 * requests for one event carry the same webhook-id: delivery is at least once, repeats can be
 * dropped.
 */
function expectEveryEventDelivered(receiver: HttpReceiver, events: EventRecord[]) {
  const deviceOf = (r: { json: unknown }) => (r.json as { data: { deviceName: string } }).data.deviceName;
  const idsByDevice = new Map<string, Set<string>>();
  for (const r of receiver.requests) {
    expect(r.verifiedWith).toBe(0);
    const ids = idsByDevice.get(deviceOf(r)) ?? new Set<string>();
    ids.add(String(r.headers['webhook-id']));
    idsByDevice.set(deviceOf(r), ids);
  }
  const delivered = new Set(receiver.accepted().map(deviceOf));
  expect([...delivered].sort()).toEqual(events.map((e) => e.deviceName).sort());
  for (const [device, ids] of idsByDevice) expect([device, ids.size]).toEqual([device, 1]);
}

/** Waits until `count` distinct notifications were answered 2xx and nothing is left to deliver. */
async function allDelivered(p: Pipeline, receiver: HttpReceiver, count: number): Promise<void> {
  await until(
    () => new Set(receiver.accepted().map((r) => r.headers['webhook-id'])).size >= count,
    `all ${count}`,
    60_000,
  );
  await eventually(() => notificationsSettled(p), { timeoutMs: 30_000, message: 'nothing left to deliver' });
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
    await allDelivered(p, receiver, 5);
    expectEveryEventDelivered(receiver, events);
    expect(await admin.listFailed('acme')).toEqual([]);
  });

  it(
    'delivers everything when the notifier is SIGKILLed mid-delivery, twice',
    { timeout: 120_000 },
    async () => {
      const p = await startPipeline({ roles: 'api', ...FAULT_CONFIG });
      const { admin, receiver } = await setUp(p);
      const notifier = () => spawnVigil(p.config, { VIGIL_ROLES: 'notifier', VIGIL_LOG_LEVEL: 'error' });
      const events = eventsFor(30);
      let answers = holdAnswersAfter(receiver, ANSWERED_BEFORE_FAULT);
      let child = notifier();
      await emitEvents(p, events);
      for (const kill of [1, 2]) {
        await until(() => answers.held().length > 0, `a delivery held in flight before kill ${kill}`, 30_000);
        expect(receiver.accepted()).toHaveLength(kill * ANSWERED_BEFORE_FAULT); // mid-delivery
        await child.kill('SIGKILL');
        // Its connections close with it; only then are answers let go, so none reaches a dead notifier.
        await until(() => answers.waiting().length === 0, `notifier ${kill}'s held requests closed`);
        answers.release();
        if (kill === 1) answers = holdAnswersAfter(receiver, ANSWERED_BEFORE_FAULT);
        child = notifier();
      }
      await allDelivered(p, receiver, events.length);
      expectEveryEventDelivered(receiver, events);
      expect(await admin.listFailed('acme')).toEqual([]);
      await child.kill('SIGTERM');
    },
  );

  it(
    'delivers everything when Redis is killed and restarted mid-delivery',
    { timeout: 120_000 },
    async () => {
      const redis = await privateRedis();
      const p = await startPipeline({ roles: 'notifier', ...FAULT_CONFIG, redisUrl: redis.url });
      const { admin, receiver } = await setUp(p);
      const answers = holdAnswersAfter(receiver, ANSWERED_BEFORE_FAULT);
      const events = eventsFor(20);
      await emitEvents(p, events);
      await until(() => answers.held().length > 0, 'a delivery held in flight');
      await redis.kill();
      expect(receiver.accepted()).toHaveLength(ANSWERED_BEFORE_FAULT); // mid-delivery
      // Held deliveries still waiting are answered while Redis is down: the notifier records them
      // once Redis is back or, its claim lapsed meanwhile, delivers them again (same webhook-id).
      answers.release();
      await redis.restart();
      await allDelivered(p, receiver, events.length);
      expectEveryEventDelivered(receiver, events);
      expect(await admin.listFailed('acme')).toEqual([]);
    },
  );

  it(
    'stops within its bound when Redis is gone mid-delivery, and a later notifier delivers what it left',
    { timeout: 120_000 },
    async () => {
      const redis = await privateRedis();
      const p = await startPipeline({ roles: 'notifier', ...FAULT_CONFIG, redisUrl: redis.url });
      const { admin, receiver } = await setUp(p);
      const answers = holdAnswersAfter(receiver, 0);
      const events = eventsFor(5);
      await emitEvents(p, events);
      await until(() => answers.held().length > 0, 'a delivery held in flight');
      await redis.kill();
      // A delivery's outcome cannot be recorded without Redis: stopping gives up on it after its
      // bound (VIGIL_NOTIFY_TIMEOUT_MS and a second), as if the process had died.
      let stopped = 0;
      const stop = () => p.vigil.close().then(() => (stopped += 1));
      void stop();
      void stop(); // a second call waits for the same stop
      await until(() => stopped === 2, 'Vigil stopped with Redis gone', 20_000);
      answers.release();
      await redis.restart();
      const later = await startPipeline({
        roles: 'notifier',
        ...FAULT_CONFIG,
        redisUrl: redis.url,
        keyPrefix: p.config.keyPrefix,
      });
      await allDelivered(later, receiver, events.length);
      expectEveryEventDelivered(receiver, events);
      expect(await admin.listFailed('acme')).toEqual([]);
    },
  );
});
