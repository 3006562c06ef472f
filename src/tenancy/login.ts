/**
 * Username/password(/TOTP) login with the lockout of PRODUCT.md §2: after `maxFailures` failed
 * attempts for a username within `lockSeconds`, further attempts answer LOGIN_LOCKED until the
 * lock expires. Unknown usernames cost the same scrypt work as known ones.
 */
import type { Redis } from '../redis/connect.ts';
import type { Keys } from '../state/keys.ts';
import { MAX_PASSWORD_LENGTH } from './admin-credentials.ts';
import { isValidName } from './names.ts';
import { decodeUser, encodeToken } from './records.ts';
import {
  DUMMY_PASSWORD_HASH,
  generateToken,
  secretId,
  sha256Hex,
  verifyPassword,
  totpStep,
} from './secrets.ts';
import type { TokenRecord } from './types.ts';

export type LoginResult =
  | { ok: true }
  | { ok: false; code: 'INVALID_CREDENTIALS' | 'MFA_REQUIRED' | 'LOGIN_LOCKED'; retryAfterSeconds?: number };

export interface LoginDeps {
  redis: Redis;
  keys: Keys;
  clock: () => number;
  maxFailures: number;
  lockSeconds: number;
}

// The window starts at the first failure; reaching the limit restarts it as the lock period.
const RECORD_FAILURE = `
local n = redis.call('INCR', KEYS[1])
if n == 1 or n >= tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`;

export function createLogin(deps: LoginDeps) {
  const { redis, keys, clock, maxFailures, lockSeconds } = deps;

  const recordFailure = (env: string, username: string) =>
    redis.eval(RECORD_FAILURE, 1, keys.loginFailures(env, username), lockSeconds * 1000, maxFailures);

  async function lockedFor(env: string, username: string): Promise<number | undefined> {
    const key = keys.loginFailures(env, username);
    const [count, ttlMs] = await Promise.all([redis.get(key), redis.pttl(key)]);
    if (Number(count ?? 0) < maxFailures) return undefined;
    return Math.max(1, Math.ceil((ttlMs > 0 ? ttlMs : lockSeconds * 1000) / 1000));
  }

  /** Accepts a valid code once: a second login with the same code (a replay) fails. */
  async function useTotp(env: string, username: string, secret: string, code: string, nowMs: number) {
    const step = totpStep(secret, code, nowMs);
    if (step === null) return false;
    // Kept for the ±1-step window (90 s) plus a margin.
    return (await redis.set(keys.totpUsed(env, username, step), '1', 'PX', 120_000, 'NX')) === 'OK';
  }

  async function verifyLogin(
    env: string,
    username: string,
    password: string,
    totp: string | undefined,
    nowMs: number,
  ): Promise<LoginResult> {
    if (!isValidName('username', username) || password.length > MAX_PASSWORD_LENGTH) {
      // Never a user: no failure counter is created for it (attackers cannot fill Redis with
      // keys named by them), but the same scrypt work is done so the answer takes as long.
      await verifyPassword(password.slice(0, MAX_PASSWORD_LENGTH), DUMMY_PASSWORD_HASH);
      return { ok: false, code: 'INVALID_CREDENTIALS' };
    }
    const retryAfterSeconds = await lockedFor(env, username);
    if (retryAfterSeconds !== undefined) return { ok: false, code: 'LOGIN_LOCKED', retryAfterSeconds };
    const user = decodeUser(await redis.hget(keys.users(env), username));
    const passwordOk = await verifyPassword(password, user?.passwordHash ?? DUMMY_PASSWORD_HASH);
    if (!user || !passwordOk) {
      await recordFailure(env, username);
      return { ok: false, code: 'INVALID_CREDENTIALS' };
    }
    if (user.mfaEnabled && user.mfaSecret) {
      if (totp === undefined || totp === '') return { ok: false, code: 'MFA_REQUIRED' };
      if (!(await useTotp(env, username, user.mfaSecret, totp, nowMs))) {
        await recordFailure(env, username);
        return { ok: false, code: 'INVALID_CREDENTIALS' };
      }
    }
    await redis.del(keys.loginFailures(env, username));
    return { ok: true };
  }

  async function createLoginToken(env: string, username: string, ttlSeconds: number) {
    const token = generateToken();
    const hash = sha256Hex(token);
    const now = clock();
    const record: TokenRecord = {
      env,
      id: secretId(hash),
      kind: 'login',
      subject: username,
      expiresMs: now + ttlSeconds * 1000,
      createdUTC: new Date(now).toISOString(),
    };
    const key = keys.token(hash);
    await redis.multi().hset(key, encodeToken(record)).pexpireat(key, record.expiresMs).exec();
    return { token, expiresUTC: new Date(record.expiresMs).toISOString() };
  }

  return { verifyLogin, createLoginToken };
}
