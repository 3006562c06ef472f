/**
 * The BullMQ queue of notification deliveries, as the notifier (producer and worker) and the CLI
 * (`vigil notify failed|retry`) open it: prefix `<VIGIL_KEY_PREFIX>:bull`, queue `notifications`.
 * Every job is retried on the configured schedule (the receiver's Retry-After wins for a 429),
 * completed jobs are kept an hour (their ids stop a replayed event from being enqueued twice), and
 * failed jobs are kept, bounded by count and age.
 */
import { Queue, type BackoffStrategy, type JobsOptions } from 'bullmq';
import type { Config } from '../config/schema.ts';
import type { Redis } from '../redis/connect.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import { NOTIFICATION_QUEUE, type NotificationJob } from './notification.ts';

/** The backoff type of every notification job, served by {@link scheduleBackoff}. */
export const BACKOFF_TYPE = 'vigil-schedule';

/** How long completed jobs are kept, in seconds: a replay of the outbox within it enqueues nothing. */
const COMPLETED_KEPT_SECONDS = 3600;
const COMPLETED_KEPT_COUNT = 200_000;

export interface RetryPolicy {
  /** Delay before each retry, ms (VIGIL_NOTIFY_RETRY_SCHEDULE); attempts = length + 1. */
  scheduleMs: readonly number[];
  failedKept: number;
  failedKeptSeconds: number;
}

export function retryPolicyOf(config: Config): RetryPolicy {
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
    removeOnComplete: { age: COMPLETED_KEPT_SECONDS, count: COMPLETED_KEPT_COUNT },
    removeOnFail: { age: policy.failedKeptSeconds, count: policy.failedKept },
  };
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
