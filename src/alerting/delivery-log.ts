/**
 * The delivery log of an environment (`vigil notify log`): every attempt, newest first, capped —
 * when, to which channel, what kind, about which device and data point, which attempt, the outcome,
 * the receiver's answer (HTTP status or SMTP reply) and how long it took. Answers never hold
 * secrets: they are what the receiver said.
 */
import type { Logger } from '../log/logger.ts';
import { startCappedListWriter } from '../redis/capped-list-writer.ts';
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
  /** Writes what a gathering log holds (at once for one that does not gather). */
  flush(): Promise<void>;
}

interface DeliveryLogDeps {
  redis: Redis;
  keys: AlertingKeys;
  size: number;
}

/** Writes each attempt as it is recorded: the CLI's (`channel test`), which exits right after. */
export function createDeliveryLog(deps: DeliveryLogDeps): DeliveryLog {
  const { redis, keys, size } = deps;
  return {
    async record(env, attempt) {
      const key = keys.notifyLog(env);
      await redis
        .multi()
        .lpush(key, JSON.stringify(attempt))
        .ltrim(key, 0, size - 1)
        .exec();
    },
    async list(env, limit) {
      const rows = await redis.lrange(keys.notifyLog(env), 0, Math.max(limit, 1) - 1);
      return rows.map((r) => JSON.parse(r) as DeliveryAttempt);
    },
    flush: () => Promise.resolve(),
  };
}

/**
 * The notifier's log: attempts are gathered and written every `gatherMs` while they come, all of
 * an environment in one LPUSH and LTRIM. Deliveries come one by one, and writing each attempt on
 * its own cost a Redis round trip per delivery, in its critical path. The log is for people: an
 * attempt shows in `vigil notify log` up to `gatherMs` late, a write that fails is logged and its
 * lines lost (never the notification sent again), and a killed notifier loses its last `gatherMs`
 * of lines. At most `size` lines per environment are held, as the log keeps no more.
 */
export function createGatheringDeliveryLog(
  deps: DeliveryLogDeps & { gatherMs: number; log: Logger },
): DeliveryLog {
  const direct = createDeliveryLog(deps);
  const lines = startCappedListWriter({
    redis: deps.redis,
    cap: deps.size,
    delayMs: deps.gatherMs,
    log: deps.log,
    what: 'delivery log lines',
    retryFailed: false,
  });
  return {
    record(env, attempt) {
      lines.add(deps.keys.notifyLog(env), [JSON.stringify(attempt)]);
      return Promise.resolve();
    },
    list: (env, limit) => direct.list(env, limit),
    flush: () => lines.flush(),
  };
}
