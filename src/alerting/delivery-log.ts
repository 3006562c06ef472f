/**
 * The delivery log of an environment (`vigil notify log`): every attempt, newest first, capped —
 * when, to which channel, what kind, about which device and data point, which attempt, the outcome,
 * the receiver's answer (HTTP status or SMTP reply) and how long it took. Answers never hold
 * secrets: they are what the receiver said.
 */
import type { Redis } from '../redis/connect.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import type { ChannelType } from './channel-spec.ts';
import type { NotificationKind } from './notification.ts';

export const ATTEMPT_OUTCOMES = ['delivered', 'retrying', 'failed', 'discarded'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

export interface DeliveryAttempt {
  timeUTC: string;
  notificationId: string;
  channel: string;
  channelType: ChannelType | null;
  kind: NotificationKind;
  deviceName: string | null;
  sensorName: string | null;
  /** 1 for the first attempt. */
  attempt: number;
  outcome: AttemptOutcome;
  /** HTTP status or SMTP reply code, when the receiver answered. */
  status: number | null;
  /** The receiver's answer or the failure, one line. */
  answer: string;
  ms: number;
}

export interface DeliveryLog {
  record(env: string, attempt: DeliveryAttempt): Promise<void>;
  /** Newest first. */
  list(env: string, limit: number): Promise<DeliveryAttempt[]>;
}

export function createDeliveryLog(deps: { redis: Redis; keys: AlertingKeys; size: number }): DeliveryLog {
  const { redis, keys, size } = deps;
  return {
    async record(env, attempt) {
      // Two commands rather than a transaction: the trim may follow a moment late, harmlessly, and
      // on an auto-pipelined connection the concurrent deliveries' lines go out in one write.
      const key = keys.notifyLog(env);
      await Promise.all([redis.lpush(key, JSON.stringify(attempt)), redis.ltrim(key, 0, size - 1)]);
    },
    async list(env, limit) {
      const rows = await redis.lrange(keys.notifyLog(env), 0, Math.max(limit, 1) - 1);
      return rows.map((r) => JSON.parse(r) as DeliveryAttempt);
    },
  };
}
