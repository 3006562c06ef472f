/**
 * What a notification is: one BullMQ job in the `notifications` queue per (subject, channel,
 * kind). Its id derives from those three, so routing an event again (a replay of the outbox after
 * a crash) cannot enqueue it twice, and it is also the `webhook-id` the receiver sees on every
 * attempt.
 */
import { sha256Hex } from '../lib/sha256.ts';
import type { EventRecord } from '../domain/types.ts';

/** The BullMQ queue of notification deliveries. */
export const NOTIFICATION_QUEUE = 'notifications';
/** The notifier's consumer group on the event outbox. */
export const NOTIFIER_GROUP = 'notifier';

export const NOTIFICATION_KINDS = ['event', 'reminder', 'digest', 'test'] as const;
export type NotificationKind = (typeof NOTIFICATION_KINDS)[number];

/** The content of a digest: how many notifications it stands for and the newest of them. */
export interface DigestContent {
  count: number;
  /** At most 100, oldest first. */
  events: EventRecord[];
}

/** Data of a notification job. */
export interface NotificationJob {
  env: string;
  channelId: string;
  channelName: string;
  kind: NotificationKind;
  /** event and reminder: the event. */
  event?: EventRecord;
  /** reminder: the route that asks for it, by name and id (a route made anew is another route). */
  route?: { name: string; id: string };
  /** reminder: its number in the alarm's reminders on this channel, from 1. */
  reminder?: number;
  /** digest: the batch it carries (flood window or quiet hours), read at its first attempt. */
  batchId?: string;
  /** digest: the content, once read (kept for retries). */
  digest?: DigestContent;
  /** Epoch ms of what is notified (event creation; a digest's end): latency is measured from it. */
  subjectMs: number;
}

/** A notification job to add: its id, data and delay. */
export interface PlannedNotification {
  id: string;
  data: NotificationJob;
  delayMs: number;
}

/** The job id (and webhook-id) of a notification: `<kind>_<32 hex>`. */
export function notificationId(kind: NotificationKind, channelId: string, subject: string): string {
  return `${kind}_${sha256Hex(`${kind}\n${channelId}\n${subject}`).slice(0, 32)}`;
}
