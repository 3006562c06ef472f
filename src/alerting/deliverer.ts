/**
 * The delivery port: one attempt to hand a notification to a channel's receiver, whatever the
 * channel type. Each type's adapter lives in ./delivery/ (webhook, Slack, email); this picks it.
 * An adapter never throws for the receiver's sake: every answer, refusal, timeout and network
 * failure comes back as an outcome, with the decision whether another attempt may help.
 */
import type { OpenChannel } from './channel-spec.ts';
import type { NotificationContent } from './messages.ts';

export interface DeliveryOutcome {
  ok: boolean;
  /** The receiver's answer in one line: `HTTP 200 ok`, `250 2.0.0 OK`, or what went wrong. */
  answer: string;
  /** HTTP status or SMTP reply code, when the receiver answered. */
  status?: number;
  /** For a failure: whether another attempt may succeed. */
  retryable: boolean;
  /** For a failure: the receiver asked to wait this long (Retry-After). */
  retryAfterMs?: number;
  /** The start of the answer's body (HTTP), shown by `vigil channel test`. */
  body?: string;
}

/** Delivers `content` to `channel`; `notificationId` is the same on every attempt (webhook-id). */
export type Deliver<C extends OpenChannel = OpenChannel> = (
  channel: C,
  content: NotificationContent,
  notificationId: string,
) => Promise<DeliveryOutcome>;

export interface ChannelDeliverers {
  webhook: Deliver<Extract<OpenChannel, { type: 'webhook' }>>;
  slack: Deliver<Extract<OpenChannel, { type: 'slack' }>>;
  email: Deliver<Extract<OpenChannel, { type: 'email' }>>;
  /** Releases connections (keep-alive sockets, SMTP pools). */
  close(): void;
}

/** Delivers through the adapter of the channel's type. */
export function deliverTo(deliverers: ChannelDeliverers): Deliver {
  return (channel, content, id) => {
    switch (channel.type) {
      case 'webhook':
        return deliverers.webhook(channel, content, id);
      case 'slack':
        return deliverers.slack(channel, content, id);
      case 'email':
        return deliverers.email(channel, content, id);
    }
  };
}
