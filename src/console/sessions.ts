/**
 * Console sessions, kept server-side in Redis (ConsoleKeys.consoleSession). The browser holds only
 * `<env>.<secret>` in an HttpOnly cookie; Redis holds the secret's SHA-256, so a copy of Redis gives
 * no live session. A session ends after `idleMs` without a request, `maxMs` after sign-in, on
 * sign-out, and — checked on every request — when its user is deleted or their credentials change:
 * it stores the credential generation its sign-in was checked against (UserRecord.generation), and
 * is refused once the user's differs. Its role is the user's as it is now. Each session carries the
 * synchronizer token that every state-changing console request must send back (CSRF).
 */
import { randomBytes } from 'node:crypto';
import { ENV_NAME_PATTERN } from '../domain/identifiers.ts';
import type { Redis } from '../redis/connect.ts';
import { decodeUser, isCurrentGeneration } from '../tenancy/records.ts';
import { sha256Hex } from '../tenancy/secrets.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { UserRecord, UserRole } from '../tenancy/types.ts';
import type { ConsoleKeys } from './console-keys.ts';

/** What a user may do: admins manage, operators acknowledge alarms, viewers only look. */
export type ConsoleRole = UserRole;

export interface ConsoleSession {
  env: string;
  username: string;
  role: ConsoleRole;
  /** The synchronizer token of the session's forms and requests. */
  csrf: string;
  createdMs: number;
  /** Epoch ms when the session ends whatever its use. */
  endMs: number;
  /** SHA-256 hex of the session's secret: its key. */
  secretHash: string;
}

export interface SessionStore {
  /**
   * A new session; `cookie` is the value the browser keeps. `generation` is the user's credential
   * generation the sign-in was checked against (LoginResult): if it has changed since, the session
   * never opens anything.
   */
  create(
    env: string,
    username: string,
    nowMs: number,
    generation: string,
  ): Promise<{ cookie: string; session: ConsoleSession }>;
  /** The session of a cookie value, renewing its idle time; null when it has ended. */
  resolve(
    cookie: string | undefined,
    nowMs: number,
    opts?: { renew?: boolean },
  ): Promise<ConsoleSession | null>;
  destroy(session: ConsoleSession): Promise<void>;
}

const SECRET_PATTERN = /^[A-Za-z0-9_-]{43}$/;

export function createSessionStore(deps: {
  redis: Redis;
  keys: ConsoleKeys & TenancyKeys;
  idleMs: number;
  maxMs: number;
}): SessionStore {
  const { redis, keys, idleMs, maxMs } = deps;
  const ttlMs = (endMs: number, nowMs: number) => Math.max(1, Math.min(idleMs, endMs - nowMs));

  return {
    async create(env, username, nowMs, generation) {
      const secret = randomBytes(32).toString('base64url');
      const secretHash = sha256Hex(secret);
      const session: ConsoleSession = {
        env,
        username,
        role: 'operator',
        csrf: randomBytes(32).toString('base64url'),
        createdMs: nowMs,
        endMs: nowMs + maxMs,
        secretHash,
      };
      const key = keys.consoleSession(env, secretHash);
      const [, , [, userJson]] = (await redis
        .multi()
        .hset(key, {
          username,
          csrf: session.csrf,
          createdMs: String(session.createdMs),
          endMs: String(session.endMs),
          generation,
        })
        .pexpire(key, ttlMs(session.endMs, nowMs))
        .hget(keys.users(env), username)
        .exec()) as [unknown, unknown, [Error | null, string | null]];
      session.role = roleOf(decodeUser(userJson));
      return { cookie: `${env}.${secret}`, session };
    },

    async resolve(cookie, nowMs, opts = {}) {
      const parsed = parseCookieValue(cookie);
      if (!parsed) return null;
      const secretHash = sha256Hex(parsed.secret);
      const key = keys.consoleSession(parsed.env, secretHash);
      const h = await redis.hgetall(key);
      const endMs = Number(h.endMs);
      if (!h.username || !h.csrf || !Number.isFinite(endMs) || nowMs >= endMs) return null;
      const pipe = redis.pipeline().hget(keys.users(parsed.env), h.username);
      if (opts.renew !== false) pipe.pexpire(key, ttlMs(endMs, nowMs));
      const [[err, userJson] = [null, null]] = (await pipe.exec()) ?? [];
      if (err) throw err;
      // A deleted user's sessions end with them, and so do those of credentials since replaced.
      const user = decodeUser(typeof userJson === 'string' ? userJson : null);
      if (!user || !isCurrentGeneration(user, h.generation)) {
        await redis.del(key);
        return null;
      }
      return {
        env: parsed.env,
        username: h.username,
        role: roleOf(user),
        csrf: h.csrf,
        createdMs: Number(h.createdMs),
        endMs,
        secretHash,
      };
    },

    async destroy(session) {
      await redis.del(keys.consoleSession(session.env, session.secretHash));
    },
  };
}

/** `<env>.<secret>` → its parts, or null for anything else. */
function parseCookieValue(value: string | undefined): { env: string; secret: string } | null {
  if (!value) return null;
  const dot = value.indexOf('.');
  const env = value.slice(0, dot);
  const secret = value.slice(dot + 1);
  if (dot < 1 || !ENV_NAME_PATTERN.test(env) || !SECRET_PATTERN.test(secret)) return null;
  return { env, secret };
}

/**
 * The role of a user (none: viewer). Records written before roles existed have none: operator. A
 * role this version does not know gets the least: viewer.
 */
export function roleOf(user: UserRecord | null): ConsoleRole {
  if (!user) return 'viewer';
  const role: unknown = user.role;
  if (role === undefined || role === null || role === 'operator') return 'operator';
  return role === 'admin' ? 'admin' : 'viewer';
}
