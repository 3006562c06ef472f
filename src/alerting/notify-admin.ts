/**
 * What operators ask of delivery (`vigil notify …`, `vigil channel test`): the failed
 * notifications of an environment with the receiver's last answer, sending them again, the delivery
 * log, and a test notification through the real delivery path (guard, signing, the receiver's
 * answer), recorded in the log like any other attempt.
 */
import { randomBytes } from 'node:crypto';
import type { Job } from 'bullmq';
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import { loadChannel, openChannel } from './channel-admin.ts';
import type { Deliver, DeliveryOutcome } from './deliverer.ts';
import type { DeliveryLog } from './delivery-log.ts';
import type { NotificationJob } from './notification.ts';
import type { NotificationQueue } from './notification-queue.ts';
import type { SecretBox } from './secret-box.ts';

export interface FailedNotification {
  id: string;
  kind: NotificationJob['kind'];
  channel: string;
  deviceName: string | null;
  sensorName: string | null;
  createdUTC: string;
  failedUTC: string | null;
  attempts: number;
  /** The receiver's last answer (or the failure). */
  lastAnswer: string;
}

export interface NotifyAdminDeps {
  redis: Redis;
  keys: AlertingKeys;
  box: SecretBox;
  /** Opens the notification queue on first use (the CLI needs it only for failed and retry). */
  queue: () => NotificationQueue;
  deliver: Deliver;
  deliveryLog: DeliveryLog;
  clock?: () => number;
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

function describeFailed(job: Job<NotificationJob>): FailedNotification {
  return {
    id: job.id ?? '',
    kind: job.data.kind,
    channel: job.data.channelName,
    deviceName: job.data.event?.deviceName ?? null,
    sensorName: job.data.event?.sensorName ?? null,
    createdUTC: new Date(job.timestamp).toISOString(),
    failedUTC: iso(job.finishedOn),
    attempts: job.attemptsMade,
    lastAnswer: job.failedReason,
  };
}

export function createNotifyAdmin(deps: NotifyAdminDeps) {
  const { redis, keys, box } = deps;
  const clock = deps.clock ?? Date.now;

  async function failedJobs(env: string): Promise<Job<NotificationJob>[]> {
    const jobs = await deps.queue().getFailed(0, -1);
    return jobs.filter((j) => j.data.env === env).sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0));
  }

  return {
    /** Failed notifications of `env`, newest first. */
    async listFailed(env: string): Promise<FailedNotification[]> {
      return (await failedJobs(env)).map(describeFailed);
    },

    /** Sends failed notifications again with a fresh retry schedule: the given ids, or all of `env`. */
    async retryFailed(env: string, ids: string[]): Promise<string[]> {
      const failed = await failedJobs(env);
      const chosen = ids.length === 0 ? failed : ids.map((id) => failed.find((j) => j.id === id));
      const unknown = ids.filter((_id, i) => chosen[i] === undefined);
      if (unknown.length > 0) {
        throw new AppError(
          'NOTIFICATION_NOT_FOUND',
          `no failed notification ${unknown.join(', ')} in ${env}`,
        );
      }
      const retried: string[] = [];
      for (const job of chosen) {
        if (!job) continue;
        await job.retry('failed', { resetAttemptsMade: true, resetAttemptsStarted: true });
        retried.push(job.id ?? '');
      }
      return retried;
    },

    listAttempts: (env: string, limit: number) => deps.deliveryLog.list(env, limit),

    /** Sends a `test` notification to a channel now and returns the receiver's answer. */
    async testChannel(
      env: string,
      name: string,
    ): Promise<DeliveryOutcome & { notificationId: string; ms: number }> {
      const record = await loadChannel(redis, keys, env, name);
      const channel = openChannel(record, box, clock());
      const id = `test_${randomBytes(16).toString('hex')}`;
      const startedMs = clock();
      const outcome = await deps.deliver(
        channel,
        { kind: 'test', env, channelName: name, createdMs: startedMs },
        id,
      );
      const ms = clock() - startedMs;
      await deps.deliveryLog.record(env, {
        timeUTC: new Date(startedMs).toISOString(),
        notificationId: id,
        channel: name,
        channelType: record.type,
        kind: 'test',
        deviceName: null,
        sensorName: null,
        attempt: 1,
        outcome: outcome.ok ? 'delivered' : 'failed',
        status: outcome.status ?? null,
        answer: outcome.answer,
        ms,
      });
      return { ...outcome, notificationId: id, ms };
    },
  };
}

export type NotifyAdmin = ReturnType<typeof createNotifyAdmin>;
