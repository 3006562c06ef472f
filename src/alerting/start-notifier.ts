/**
 * The `notifier` role: reads the event outbox with its own consumer group and routes events into
 * BullMQ notification jobs, and delivers those jobs. Any number of notifiers may run against one
 * Redis: the consumer group shares the outbox between them and BullMQ shares the jobs.
 *
 * A notifier killed mid-delivery never turns a notification into a failure: its claims lapse after
 * VIGIL_NOTIFY_STALLED_INTERVAL_MS, the job goes back to waiting without counting as an attempt
 * (stalls are not limited), and another notifier delivers it again with the same webhook-id.
 *
 * Stopping is bounded, Redis or no Redis: deliveries in flight get VIGIL_NOTIFY_TIMEOUT_MS and a
 * second to end and be recorded, every other part a few seconds; what is still going after that is
 * left behind exactly as a killed notifier leaves it.
 */
import { Worker, type Job } from 'bullmq';
import type { Registry } from 'prom-client';
import type { Config } from '../config/schema.ts';
import type { EventKeys } from '../events/event-keys.ts';
import { startOutboxConsumer } from '../events/outbox-consumer.ts';
import type { Logger } from '../log/logger.ts';
import type { StateKeys } from '../state/state-keys.ts';
import { closeRedis, connectRedis, type Redis } from '../redis/connect.ts';
import { openTrackedHashes } from '../redis/tracked-hashes.ts';
import { createAddressGuard } from './address-guard.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import { deliverTo } from './deliverer.ts';
import { createChannelDeliverers } from './delivery/create-deliverers.ts';
import { createGatheringDeliveryLog } from './delivery-log.ts';
import { createDeliveryProcessor } from './delivery-processor.ts';
import { createDigestBatches } from './digest-batches.ts';
import {
  NOTIFICATION_QUEUE,
  NOTIFIER_GROUP,
  type NotificationJob,
  type PlannedNotification,
} from './notification.ts';
import {
  notificationJob,
  notificationJobOptions,
  openNotificationQueue,
  retryPolicyOf,
  scheduleBackoff,
} from './notification-queue.ts';
import { createNotificationRouter } from './notification-router.ts';
import { createNotifyMetrics } from './notify-metrics.ts';
import { createReminderCheck } from './reminders.ts';
import { createSecretBox } from './secret-box.ts';

/** How long delivery attempts are gathered before they are written to the delivery log. */
const DELIVERY_LOG_GATHER_MS = 250;

/** Stalls are never held against a job: a notifier may die any number of times. */
const UNLIMITED_STALLS = 1_000_000_000;

/**
 * Longest each part but the deliveries in flight takes to stop, in ms. Each may wait for Redis
 * (the outbox reader for its routing, BullMQ for its connections), and Redis may be gone for good.
 */
const STOP_BOUND_MS = 2000;

/** How long past a delivery's own timeout stopping waits for its outcome to be recorded, in ms. */
const RECORD_GRACE_MS = 1000;

export interface Notifier {
  close(): Promise<void>;
}

interface NotifierDeps {
  config: Config;
  keys: AlertingKeys & EventKeys & StateKeys;
  log: Logger;
  metrics: Registry;
}

/** How long digest batches are kept: longer than their digest's retries (the schedule twice, plus a day). */
const batchKeepMs = (scheduleMs: readonly number[]) =>
  2 * scheduleMs.reduce((a, b) => a + b, 0) + Math.max(...scheduleMs, 0) + 86_400_000;

/** The BullMQ worker that delivers notification jobs. */
function startDeliveryWorker(
  deps: NotifierDeps,
  connection: Redis,
  processor: (job: Job<NotificationJob>) => Promise<string>,
  log: Logger,
): Worker<NotificationJob, string> {
  const { config } = deps;
  const worker = new Worker<NotificationJob, string>(NOTIFICATION_QUEUE, processor, {
    connection,
    prefix: deps.keys.bullPrefix(),
    concurrency: config.notifyConcurrency,
    lockDuration: config.notifyStalledIntervalMs,
    stalledInterval: config.notifyStalledIntervalMs,
    maxStalledCount: UNLIMITED_STALLS,
    settings: { backoffStrategy: scheduleBackoff(config.notifyRetrySchedule) },
  });
  // Delivery failures are logged per attempt; these are BullMQ's own (Redis gone, lock lost).
  worker.on('error', (err) => log.warn({ err: err.message }, 'notification worker'));
  return worker;
}

/** What stopping a part came to: done, failed (with why), or still going when its bound passed. */
async function stopWithin(stopping: Promise<unknown>, boundMs: number): Promise<'done' | 'late' | Error> {
  const bound = Promise.withResolvers<'late'>();
  const timer = setTimeout(() => bound.resolve('late'), boundMs);
  try {
    return await Promise.race([
      stopping.then(
        () => 'done' as const,
        (err: unknown) => (err instanceof Error ? err : new Error(String(err))),
      ),
      bound.promise,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Stops the parts in order, each within its bound (ms): one that fails, or is still stopping when
 * its bound passes, is logged and left behind, and the next is stopped all the same.
 */
async function closeInOrder(steps: [string, () => Promise<unknown>, number][], log: Logger): Promise<void> {
  for (const [name, stop, boundMs] of steps) {
    const outcome = await stopWithin(Promise.resolve().then(stop), boundMs);
    if (outcome === 'late')
      log.warn({ step: name, boundMs }, 'notifier: still stopping after its bound; left behind');
    else if (outcome !== 'done')
      log.warn({ err: outcome.message, step: name }, 'notifier: failed to stop cleanly');
  }
}

export function startNotifier(deps: NotifierDeps): Notifier {
  const { config, keys } = deps;
  const log = deps.log.child({ component: 'notifier' });
  const policy = retryPolicyOf(config);
  const redis = connectRedis(config.redisUrl, 'command', 'vigil-notifier', { autoPipeline: true });
  const queueConnection = connectRedis(config.redisUrl, 'blocking', 'vigil-notify-queue');
  const workerConnection = connectRedis(config.redisUrl, 'blocking', 'vigil-notify-worker');
  // Routes and channels change seldom and are read for every batch and every delivery.
  const hashes = openTrackedHashes(config.redisUrl, 'vigil-notifier', log);
  const queue = openNotificationQueue(queueConnection, keys, policy);
  const metrics = createNotifyMetrics(deps.metrics, queue);
  const deliverers = createChannelDeliverers({
    guard: createAddressGuard({ allowedHosts: config.notifyAllowedHosts }),
    timeoutMs: config.notifyTimeoutMs,
    smtpUrl: config.smtpUrl,
    smtpFrom: config.smtpFrom,
  });
  const batches = createDigestBatches({
    redis,
    keys,
    windowMs: config.notifyFloodWindowMs,
    threshold: config.notifyDigestThreshold,
    keepMs: batchKeepMs(policy.scheduleMs),
  });
  const options = notificationJobOptions(policy);
  const enqueue = async (jobs: PlannedNotification[]) => {
    const bulk = jobs.map((j) => ({
      name: j.data.kind,
      data: j.data,
      opts: notificationJob(options, j.id, j.delayMs),
    }));
    await queue.addBulk(bulk);
  };
  const route = createNotificationRouter({ hashes, keys, batches, log, enqueue });
  const deliveryLog = createGatheringDeliveryLog({
    redis,
    keys,
    size: config.notifyLogSize,
    gatherMs: DELIVERY_LOG_GATHER_MS,
    log,
  });
  const processor = createDeliveryProcessor({
    hashes,
    keys,
    box: createSecretBox(config.secretsKey),
    batches,
    deliver: deliverTo(deliverers),
    deliveryLog,
    metrics,
    checkReminder: createReminderCheck({ redis, keys }),
    enqueue,
    log,
  });
  const worker = startDeliveryWorker(deps, workerConnection, processor, log);
  const consumer = startOutboxConsumer({
    redisUrl: config.redisUrl,
    keys,
    group: NOTIFIER_GROUP,
    consumer: `${process.pid}-${Date.now()}`,
    log,
    handle: route,
    reclaimIdleMs: config.notifyReclaimIdleMs,
    gatherMs: config.notifyGatherMs,
    maxEntries: config.eventOutboxMaxEntries,
  });
  log.debug('notifier started');

  let closing: Promise<void> | undefined;
  const close = () =>
    closeInOrder(
      [
        ['outbox reader', () => consumer.close(), STOP_BOUND_MS],
        // Takes no more jobs and waits for those in flight; one given up on here is like one of a
        // killed notifier: its claim lapses and it is delivered again, with the same webhook-id.
        ['deliveries in flight', () => worker.pause(), config.notifyTimeoutMs + RECORD_GRACE_MS],
        // Forced: it does not wait for the deliveries again, nor for Redis to close its connection.
        ['worker', () => worker.close(true), STOP_BOUND_MS],
        ['delivery log', () => deliveryLog.flush(), STOP_BOUND_MS],
        ['queue', () => queue.close(), STOP_BOUND_MS],
        ['deliverers', () => Promise.resolve(deliverers.close()), STOP_BOUND_MS],
        ['tracked reads', () => hashes.close(), STOP_BOUND_MS],
        [
          'redis',
          () => Promise.all([redis, queueConnection, workerConnection].map(closeRedis)),
          STOP_BOUND_MS,
        ],
      ],
      log,
    );
  return { close: () => (closing ??= close()) };
}
