/**
 * The `notifier` role: reads the event outbox with its own consumer group and routes events into
 * BullMQ notification jobs, and delivers those jobs. Any number of notifiers may run against one
 * Redis: the consumer group shares the outbox between them and BullMQ shares the jobs. main.ts
 * starts it; it puts alerting's parts together, on connections from the process's factory.
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
import { createAddressGuard } from '../alerting/address-guard.ts';
import type { AlertingKeys } from '../alerting/alerting-keys.ts';
import { deliverTo, type ChannelDeliverers } from '../alerting/deliverer.ts';
import { createChannelDeliverers } from '../alerting/delivery/create-deliverers.ts';
import { createGatheringDeliveryLog } from '../alerting/delivery-log.ts';
import { createDeliveryProcessor } from '../alerting/delivery-processor.ts';
import { createDigestBatches, type DigestBatches } from '../alerting/digest-batches.ts';
import {
  NOTIFICATION_QUEUE,
  NOTIFIER_GROUP,
  type NotificationJob,
  type PlannedNotification,
} from '../alerting/notification.ts';
import {
  notificationJob,
  notificationJobOptions,
  openNotificationQueue,
  retryPolicyOf,
  scheduleBackoff,
  type NotificationQueue,
  type RetryPolicy,
  type RetryPolicyConfig,
} from '../alerting/notification-queue.ts';
import { createNotificationRouter } from '../alerting/notification-router.ts';
import { createNotifyMetrics } from '../alerting/notify-metrics.ts';
import { createReminderCheck } from '../alerting/reminders.ts';
import { createSecretBox } from '../alerting/secret-box.ts';
import type { Config } from '../config/schema.ts';
import { settingSource } from '../config/setting-source.ts';
import type { EventKeys } from '../events/event-keys.ts';
import { startOutboxConsumer } from '../events/outbox-consumer.ts';
import { createLifecycle } from '../lib/lifecycle.ts';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { Connections } from '../redis/connections.ts';
import { openTrackedHashes, type TrackedHashes } from '../redis/tracked-hashes.ts';
import type { StateKeys } from '../state/state-keys.ts';
import { createCatalog, type Catalog } from '../tenancy/catalog.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import { createTenancyStore } from '../tenancy/tenancy-store.ts';

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

/** A running notifier. */
export interface Notifier {
  /** Stops it part by part, each within its bound; safe to call twice. */
  close(): Promise<void>;
}

/** The settings the notifier reads. */
export type NotifierConfig = RetryPolicyConfig &
  Pick<
    Config,
    | 'notifyConcurrency'
    | 'notifyStalledIntervalMs'
    | 'notifyAllowedHosts'
    | 'notifyTimeoutMs'
    | 'smtpUrl'
    | 'smtpFrom'
    | 'notifyFloodWindowMs'
    | 'notifyDigestThreshold'
    | 'notifyLogSize'
    | 'secretsKey'
    | 'notifyReclaimIdleMs'
    | 'notifyGatherMs'
    | 'eventOutboxMaxEntries'
    | 'catalogCacheMs'
  >;

export interface NotifierDeps {
  config: NotifierConfig;
  /** Where its connections come from: commands, the queue's, the worker's, the outbox reader's. */
  connections: Connections;
  keys: AlertingKeys & EventKeys & StateKeys & TenancyKeys;
  /**
   * Devices of events, for routes that filter on their labels: the process's catalog, or one of
   * the notifier's own (cached VIGIL_CATALOG_CACHE_MS).
   */
  catalog?: Pick<Catalog, 'devices'>;
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
  worker.on('error', (err) => log.warn({ err }, 'notification worker'));
  return worker;
}

/** Adds notification jobs: one per planned notification, with its id, kind and delay. */
function enqueueOn(queue: NotificationQueue, policy: RetryPolicy) {
  const options = notificationJobOptions(policy);
  return async (jobs: PlannedNotification[]) => {
    const bulk = jobs.map((j) => ({
      name: j.data.kind,
      data: j.data,
      opts: notificationJob(options, j.id, j.delayMs),
    }));
    await queue.addBulk(bulk);
  };
}

/** Registers a stop step, bounded by `timeoutMs` (STOP_BOUND_MS by default). */
type AddStop = (name: string, part: () => unknown, timeoutMs?: number) => void;

/** What routing and delivering share. */
interface SharedParts {
  redis: Redis;
  hashes: TrackedHashes;
  deliverers: ChannelDeliverers;
  queue: NotificationQueue;
  batches: DigestBatches;
  enqueue: (jobs: PlannedNotification[]) => Promise<void>;
  /** Devices by name, for their labels. */
  devices: Catalog['devices'];
  log: Logger;
}

/** Delivers notification jobs and records each attempt in the delivery log. */
function startDelivering(deps: NotifierDeps, parts: SharedParts, stop: AddStop): void {
  const { config, keys } = deps;
  const { redis, log } = parts;
  const deliveryLog = createGatheringDeliveryLog({
    redis,
    keys,
    size: config.notifyLogSize,
    gatherMs: DELIVERY_LOG_GATHER_MS,
    log,
  });
  stop('delivery log', () => deliveryLog.flush());
  const processor = createDeliveryProcessor({
    hashes: parts.hashes,
    keys,
    box: createSecretBox(config.secretsKey, settingSource(config, 'secretsKey')),
    batches: parts.batches,
    deliver: deliverTo(parts.deliverers),
    deliveryLog,
    metrics: createNotifyMetrics(deps.metrics, parts.queue),
    checkReminder: createReminderCheck({ redis, keys, devices: parts.devices }),
    enqueue: parts.enqueue,
    log,
  });
  const connection = deps.connections.blocking('vigil-notify-worker');
  const worker = startDeliveryWorker(deps, connection, processor, log);
  // Forced: it does not wait for the deliveries again, nor for Redis to close its connection.
  stop('worker', () => worker.close(true));
  // Takes no more jobs and waits for those in flight; one given up on here is like one of a
  // killed notifier: its claim lapses and it is delivered again, with the same webhook-id.
  stop('deliveries in flight', () => worker.pause(), config.notifyTimeoutMs + RECORD_GRACE_MS);
}

/** Starts routing and delivering notifications; `close()` stops every part within its bound. */
export function startNotifier(deps: NotifierDeps): Notifier {
  const { config, connections, keys } = deps;
  const log = deps.log.child({ component: 'notifier' });
  // Stopped last registered first, each part within its bound.
  const lifecycle = createLifecycle({ log });
  const stop: AddStop = (name, part, timeoutMs = STOP_BOUND_MS) => lifecycle.add(name, part, { timeoutMs });
  const policy = retryPolicyOf(config);
  const redis = connections.command('vigil-notifier', { autoPipeline: true });
  // Routes and channels change seldom and are read for every batch and every delivery.
  const hashes = openTrackedHashes(connections, 'vigil-notifier', log);
  stop('tracked reads', () => hashes.close());
  const deliverers = createChannelDeliverers({
    guard: createAddressGuard({ allowedHosts: config.notifyAllowedHosts }),
    timeoutMs: config.notifyTimeoutMs,
    smtpUrl: config.smtpUrl,
    smtpFrom: config.smtpFrom,
  });
  stop('deliverers', () => deliverers.close());
  const queue = openNotificationQueue(connections.blocking('vigil-notify-queue'), keys, policy);
  stop('queue', () => queue.close());
  const batches = createDigestBatches({
    redis,
    keys,
    windowMs: config.notifyFloodWindowMs,
    threshold: config.notifyDigestThreshold,
    keepMs: batchKeepMs(policy.scheduleMs),
  });
  const enqueue = enqueueOn(queue, policy);
  const catalog =
    deps.catalog ??
    createCatalog({ tenancy: createTenancyStore({ redis, keys }), ttlMs: config.catalogCacheMs });
  const devices: Catalog['devices'] = (env, names) => catalog.devices(env, names);
  startDelivering(deps, { redis, hashes, deliverers, queue, batches, enqueue, devices, log }, stop);
  const consumer = startOutboxConsumer({
    connections,
    keys,
    group: NOTIFIER_GROUP,
    consumer: `${process.pid}-${Date.now()}`,
    log,
    handle: createNotificationRouter({ hashes, keys, devices, batches, log, enqueue }),
    reclaimIdleMs: config.notifyReclaimIdleMs,
    gatherMs: config.notifyGatherMs,
    maxEntries: config.eventOutboxMaxEntries,
  });
  stop('outbox reader', () => consumer.close());
  log.debug('notifier started');
  return { close: lifecycle.close };
}
