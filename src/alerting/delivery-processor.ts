/**
 * One attempt at a notification job: load and open its channel, build the content (a digest seals
 * its batch at the first attempt and keeps the content in the job for retries; a reminder checks
 * its alarm and plans the next one), deliver, log the attempt, count it, and tell BullMQ what next:
 * done, retry (an error whose `retryAfterMs` carries the receiver's Retry-After) or fail for good
 * (UnrecoverableError).
 */
import { UnrecoverableError, type Job } from 'bullmq';
import { LRUCache } from 'lru-cache';
import { AppError } from '../errors/app-error.ts';
import type { Logger } from '../log/logger.ts';
import type { TrackedHashes } from '../redis/tracked-hashes.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import { openChannel } from './channel-admin.ts';
import type { ChannelRecord, OpenChannel } from './channel-spec.ts';
import type { Deliver, DeliveryOutcome } from './deliverer.ts';
import type { DeliveryLog, AttemptOutcome } from './delivery-log.ts';
import type { DigestBatches } from './digest-batches.ts';
import type { NotificationContent } from './messages.ts';
import type { NotificationJob, PlannedNotification } from './notification.ts';
import type { WaitRequest } from './notification-queue.ts';
import type { NotifyMetrics } from './notify-metrics.ts';
import type { ReminderDecision } from './reminders.ts';
import type { SecretBox } from './secret-box.ts';

export interface ProcessorDeps {
  /** Channel records, read through the notifier's client-side cache. */
  hashes: Pick<TrackedHashes, 'hgetall'>;
  keys: AlertingKeys;
  box: SecretBox;
  batches: DigestBatches;
  deliver: Deliver;
  deliveryLog: DeliveryLog;
  metrics: NotifyMetrics;
  /** Whether a reminder that came due is still called for, and its successor (reminders.ts). */
  checkReminder(data: NotificationJob, nowMs: number): Promise<ReminderDecision>;
  /** Enqueues jobs (the next reminder). */
  enqueue(jobs: PlannedNotification[]): Promise<void>;
  log: Logger;
  clock?: () => number;
}

/** A failed attempt that another attempt may mend, with the wait the receiver asked for. */
class RetryableDelivery extends AppError implements WaitRequest {
  readonly retryAfterMs: number | undefined;
  constructor(answer: string, retryAfterMs: number | undefined) {
    super('DELIVERY_FAILED', answer, { retryable: true });
    this.retryAfterMs = retryAfterMs;
  }
}

/** A channel as stored and as opened, until `untilMs` (when its previous secret stops signing). */
interface OpenedChannel {
  stored: string;
  channel: OpenChannel;
  untilMs: number;
}

/** Channels kept opened: decrypting a channel's secrets costs more than the rest of its delivery's bookkeeping. */
const OPENED_KEPT = 1000;

export function createDeliveryProcessor(deps: ProcessorDeps): (job: Job<NotificationJob>) => Promise<string> {
  const { hashes, keys, box, batches, deliver, deliveryLog, metrics } = deps;
  const clock = deps.clock ?? Date.now;
  const opened = new LRUCache<string, OpenedChannel>({ max: OPENED_KEPT });

  /**
   * The channel the job was made for, opened; undefined when it was deleted (or deleted and made
   * anew) since. Read at every attempt, so a change applies at once (through the client-side cache,
   * which Redis tells of every change); opened again only when what is stored changed or its
   * previous secret's grace period ended.
   */
  async function channelOf(data: NotificationJob): Promise<OpenChannel | undefined> {
    const json = (await hashes.hgetall(keys.channels(data.env)))[data.channelName];
    if (json === undefined) return undefined;
    const cacheKey = `${data.env}\n${data.channelName}`;
    const nowMs = clock();
    const hit = opened.get(cacheKey);
    if (hit && hit.stored === json && nowMs < hit.untilMs)
      return hit.channel.id === data.channelId ? hit.channel : undefined;
    const record = JSON.parse(json) as ChannelRecord;
    if (record.id !== data.channelId) return undefined;
    const channel = openChannel(record, box, nowMs);
    const graceEndMs = record.previousSecret?.untilMs ?? Infinity;
    opened.set(cacheKey, { stored: json, channel, untilMs: graceEndMs > nowMs ? graceEndMs : Infinity });
    return channel;
  }

  /** The content; a digest's is read (and its batch sealed) once, then kept in the job. */
  async function contentOf(job: Job<NotificationJob>): Promise<NotificationContent> {
    const data = job.data;
    let digest = data.digest;
    if (data.kind === 'digest' && !digest) {
      digest = await batches.seal(data.env, data.batchId ?? '');
      await job.updateData({ ...data, digest });
    }
    return {
      kind: data.kind,
      env: data.env,
      channelName: data.channelName,
      createdMs: job.timestamp,
      ...(data.event ? { event: data.event } : {}),
      ...(digest ? { digest } : {}),
    };
  }

  async function record(
    job: Job<NotificationJob>,
    channel: OpenChannel | undefined,
    outcome: AttemptOutcome,
    result: Pick<DeliveryOutcome, 'answer' | 'status'>,
    ms: number,
  ) {
    const { data } = job;
    metrics.deliveries.inc({ channel_type: channel?.type ?? 'unknown', outcome });
    // The log is for people: losing a line to a Redis blip must not send the notification again.
    await deliveryLog
      .record(data.env, {
        timeUTC: new Date(clock()).toISOString(),
        notificationId: job.id ?? '',
        channel: data.channelName,
        channelType: channel?.type ?? null,
        kind: data.kind,
        deviceName: data.event?.deviceName ?? null,
        sensorName: data.event?.sensorName ?? null,
        attempt: job.attemptsMade + 1,
        outcome,
        status: result.status ?? null,
        answer: result.answer,
        ms,
      })
      .catch((err: unknown) => deps.log.warn({ err }, 'delivery log: write failed'));
  }

  /**
   * A reminder that came due: its successor is planned at its first attempt (a retry or a stall
   * plans the same job again, which enqueues nothing), and it goes out only while it is called for.
   */
  async function remind(job: Job<NotificationJob>): Promise<string | undefined> {
    const decision = await deps.checkReminder(job.data, clock());
    if (decision.next && job.attemptsMade === 0) await deps.enqueue([decision.next]);
    return decision.send ? undefined : decision.reason;
  }

  return async (job) => {
    const channel = await channelOf(job.data);
    if (!channel) {
      await record(job, undefined, 'discarded', { answer: 'the channel was deleted' }, 0);
      return 'discarded';
    }
    if (job.data.kind === 'reminder') {
      const skipped = await remind(job);
      if (skipped !== undefined) return skipped;
    }
    const content = await contentOf(job);
    if (content.kind === 'digest' && (content.digest?.count ?? 0) === 0) return 'empty digest';
    const startedMs = clock();
    const outcome = await deliver(channel, content, job.id ?? '');
    const ms = clock() - startedMs;
    if (outcome.ok) {
      await record(job, channel, 'delivered', outcome, ms);
      metrics.latency.observe(
        { channel_type: channel.type },
        Math.max(clock() - job.data.subjectMs, 0) / 1000,
      );
      return outcome.answer;
    }
    const last = !outcome.retryable || job.attemptsMade + 1 >= (job.opts.attempts ?? 1);
    await record(job, channel, last ? 'failed' : 'retrying', outcome, ms);
    if (!outcome.retryable) throw new UnrecoverableError(outcome.answer);
    throw new RetryableDelivery(outcome.answer, outcome.retryAfterMs);
  };
}
