/**
 * The BullMQ queue of notification deliveries, as the notifier (producer and worker) and the CLI
 * (`vigil notify failed|retry`) open it: prefix `<VIGIL_KEY_PREFIX>:bull`, queue `notifications`.
 * Every job is retried on the configured schedule (the receiver's Retry-After wins for a 429),
 * completed jobs are deleted at once, and failed jobs are kept, bounded by count and age. A
 * notification is enqueued at most once an hour: its id is also a deduplication key that lives that
 * long, so the outbox entry of an event routed again (a notifier that died before acknowledging it)
 * enqueues nothing, although the job it made may be done and gone.
 */
import { Queue, type BackoffStrategy, type JobsOptions } from 'bullmq';
import type { Config } from '../config/schema.ts';
import type { Redis } from '../redis/connect.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import { NOTIFICATION_QUEUE, type NotificationJob } from './notification.ts';

/** The backoff type of every notification job, served by {@link scheduleBackoff}. */
export const BACKOFF_TYPE = 'vigil-schedule';

/**
 * How long a notification's id keeps a second one with that id out, from when it was enqueued: far
 * longer than the outbox takes to hand an unacknowledged entry to another notifier. (While the job
 * itself exists, BullMQ adds nothing for its id anyway.) Keeping completed jobs for this instead
 * held a copy of every event notified in the last hour in Redis, which runs without eviction.
 */
const ENQUEUED_ONCE_MS = 3_600_000;

export interface RetryPolicy {
  /** Delay before each retry, ms (VIGIL_NOTIFY_RETRY_SCHEDULE); attempts = length + 1. */
  scheduleMs: readonly number[];
  failedKept: number;
  failedKeptSeconds: number;
}

/** The settings a retry policy is made of. */
export type RetryPolicyConfig = Pick<
  Config,
  'notifyRetrySchedule' | 'notifyFailedKept' | 'notifyFailedKeptSeconds'
>;

export function retryPolicyOf(config: RetryPolicyConfig): RetryPolicy {
  return {
    scheduleMs: config.notifyRetrySchedule,
    failedKept: config.notifyFailedKept,
    failedKeptSeconds: config.notifyFailedKeptSeconds,
  };
}

export type NotificationQueue = Queue<NotificationJob, unknown, string>;

/** An error that asks for a particular wait before the next attempt (a receiver's Retry-After). */
export interface WaitRequest {
  retryAfterMs?: number;
}

/** Retry `attemptsMade` (1 = the first retry) waits the schedule's delay, or what the receiver asked for. */
export function scheduleBackoff(scheduleMs: readonly number[]): BackoffStrategy {
  return (attemptsMade, _type, err) => {
    const asked = err && 'retryAfterMs' in err ? (err as WaitRequest).retryAfterMs : undefined;
    if (typeof asked === 'number') return asked;
    return scheduleMs[Math.min(attemptsMade, scheduleMs.length) - 1] ?? scheduleMs.at(-1) ?? 1000;
  };
}

export function notificationJobOptions(policy: RetryPolicy): JobsOptions {
  return {
    attempts: policy.scheduleMs.length + 1,
    backoff: { type: BACKOFF_TYPE },
    removeOnComplete: true,
    removeOnFail: { age: policy.failedKeptSeconds, count: policy.failedKept },
  };
}

/** The options of the job `jobId` (a notification id), delayed by `delayMs`. */
export function notificationJob(options: JobsOptions, jobId: string, delayMs: number): JobsOptions {
  return { ...options, jobId, delay: delayMs, deduplication: { id: jobId, ttl: ENQUEUED_ONCE_MS } };
}

/** Opens the queue on `connection` (a `blocking` connection: commands wait out a Redis restart). */
export function openNotificationQueue(
  connection: Redis,
  keys: AlertingKeys,
  policy: RetryPolicy,
): NotificationQueue {
  return new Queue<NotificationJob, unknown, string>(NOTIFICATION_QUEUE, {
    connection,
    prefix: keys.bullPrefix(),
    defaultJobOptions: notificationJobOptions(policy),
  });
}
