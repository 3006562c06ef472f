/**
 * The audit log of an environment: who acknowledged which alarm and who changed which channel or
 * route, and when. A capped Redis list, newest first (AlertingKeys.audit, VIGIL_AUDIT_LOG_SIZE
 * entries). Acknowledgements are written in the same script as the acknowledgement itself
 * (acknowledge-alarm.lua); channel and route changes right after the change (alerting-admin.ts).
 */
import { userInfo } from 'node:os';
import type { Redis } from '../redis/connect.ts';
import type { TokenRecord } from '../tenancy/types.ts';
import type { AlertingKeys } from './alerting-keys.ts';

export const AUDIT_ACTIONS = [
  'alarm.acknowledge',
  'channel.create',
  /** Created or changed by `vigil provision apply`. */
  'channel.provision',
  'channel.delete',
  'channel.rotate-secret',
  'route.create',
  'route.provision',
  'route.delete',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntry {
  atUTC: string;
  /** Who: a username, `token:<name>` (a CLI token), `cli:<OS user>` (the vigil command). */
  actor: string;
  action: AuditAction;
  /** What: `<device>/<sensor>` (`<device>/availability` for Availability), a channel or route name. */
  target: string;
  details: Record<string, unknown>;
}

export interface AuditLog {
  record(env: string, entry: AuditEntry): Promise<void>;
  /** The newest `limit` entries, newest first. */
  list(env: string, limit: number): Promise<AuditEntry[]>;
}

export function createAuditLog(deps: { redis: Redis; keys: AlertingKeys; size: number }): AuditLog {
  const { redis, keys, size } = deps;
  return {
    async record(env, entry) {
      await redis
        .multi()
        .lpush(keys.audit(env), JSON.stringify(entry))
        .ltrim(keys.audit(env), 0, size - 1)
        .exec();
    },
    async list(env, limit) {
      const entries = await redis.lrange(keys.audit(env), 0, limit - 1);
      return entries.map((json) => JSON.parse(json) as AuditEntry);
    },
  };
}

/** The actor of a read-API request: the user of a login token, or the name of a CLI token. */
export const tokenActor = (token: TokenRecord): string =>
  token.kind === 'login' ? token.subject : `token:${token.subject}`;

/** The actor of the `vigil` command: the OS user running it. */
export function cliActor(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    // No user entry for the process's uid (some containers).
    return 'cli';
  }
}
