/**
 * Username/password(/TOTP) login with its lockout. Failures are counted within `lockSeconds` on
 * three counters: the username from one client address (`maxFailures`), the username from all
 * addresses (`maxFailuresPerUser`) and the address across usernames (`maxFailuresPerAddress`).
 * One that reaches its limit answers LOGIN_LOCKED until it expires, so a stranger who locks a
 * username locks it only for their own address, unless they spread over many.
 *
 * Each attempt takes its place on the counters in one script BEFORE the password is checked, so
 * parallel attempts can never verify more passwords than the limits allow; a success gives its
 * place back and clears its username-and-address counter. Unknown usernames cost the same scrypt
 * work as known ones. A disabled user is refused with ACCOUNT_DISABLED, but only once the password
 * checked out, so the answer tells a stranger nothing. Knows nothing of HTTP: the caller says who
 * the client is.
 */
import ipaddr from 'ipaddr.js';
import { PUBLIC_DEMO_REFUSALS, publicDemoLoginCheck } from '../config/public-demo.ts';
import type { Config } from '../config/schema.ts';
import type { Redis } from '../redis/connect.ts';
import type { TenancyKeys } from './tenancy-keys.ts';
import { MAX_PASSWORD_LENGTH } from './admin-credentials.ts';
import { isValidName } from './names.ts';
import { decodeUser, encodeToken, roleOf } from './records.ts';
import {
  DUMMY_PASSWORD_HASH,
  generateToken,
  secretId,
  sha256Hex,
  verifyPassword,
  totpStep,
} from './secrets.ts';
import { ROLE_SCOPES, type TokenRecord } from './types.ts';

export type LoginResult =
  /** `generation`: the user's credential generation the login was checked against ('' for none yet). */
  | { ok: true; generation: string }
  | {
      ok: false;
      code: 'INVALID_CREDENTIALS' | 'MFA_REQUIRED' | 'LOGIN_LOCKED' | 'ACCOUNT_DISABLED';
      retryAfterSeconds?: number;
      /** What to tell the user when the usual message for `code` would mislead. */
      message?: string;
    };

export interface LoginAttempt {
  env: string;
  username: string;
  password: string;
  /** The TOTP code sent, if any. */
  totp?: string | undefined;
  /** The client's IP address as the entry point saw it ('' when unknown). */
  clientAddress: string;
  /** Epoch ms (TOTP steps). */
  nowMs: number;
}

export interface LoginLimits {
  /** Failures of one username from one address (VIGIL_LOGIN_MAX_FAILURES). */
  maxFailures: number;
  /** Failures of one username from all addresses (VIGIL_LOGIN_MAX_FAILURES_PER_USER). */
  maxFailuresPerUser: number;
  /** Failures from one address across usernames (VIGIL_LOGIN_MAX_FAILURES_PER_ADDRESS). */
  maxFailuresPerAddress: number;
  /** Counting window and lock length, in seconds (VIGIL_LOGIN_LOCK_SECONDS). */
  lockSeconds: number;
  /** Accept the demo user's published password (VIGIL_DEMO); refused when absent. */
  allowPublicDemo?: boolean;
}

/** The limits as configured. */
export const loginLimitsOf = (
  config: Pick<
    Config,
    | 'loginMaxFailures'
    | 'loginMaxFailuresPerUser'
    | 'loginMaxFailuresPerAddress'
    | 'loginLockSeconds'
    | 'demo'
  >,
): LoginLimits => ({
  maxFailures: config.loginMaxFailures,
  maxFailuresPerUser: config.loginMaxFailuresPerUser,
  maxFailuresPerAddress: config.loginMaxFailuresPerAddress,
  lockSeconds: config.loginLockSeconds,
  allowPublicDemo: config.demo,
});

export interface LoginDeps extends LoginLimits {
  redis: Redis;
  keys: TenancyKeys;
  clock: () => number;
}

/**
 * KEYS: counters; ARGV[1]: window ms, ARGV[1 + i]: the limit of KEYS[i]. When a counter is at its
 * limit, returns its remaining ms (the longest of them) and takes nothing; else adds one to every
 * counter and returns 0. A window starts at its first count; reaching the limit restarts it as the
 * lock period.
 */
const RESERVE_ATTEMPT = `
local window = tonumber(ARGV[1])
local wait = 0
for i, key in ipairs(KEYS) do
  if tonumber(redis.call('GET', key) or '0') >= tonumber(ARGV[i + 1]) then
    local ttl = redis.call('PTTL', key)
    if ttl < 0 then
      redis.call('PEXPIRE', key, window)
      ttl = window
    end
    if ttl > wait then wait = ttl end
  end
end
if wait > 0 then return wait end
for i, key in ipairs(KEYS) do
  local n = redis.call('INCR', key)
  if n == 1 or n >= tonumber(ARGV[i + 1]) then redis.call('PEXPIRE', key, window) end
end
return 0`;

/** KEYS: the counters of a reservation to give back; the first ARGV[1] of them are cleared. */
const RELEASE_ATTEMPT = `
for i, key in ipairs(KEYS) do
  if i <= tonumber(ARGV[1]) then
    redis.call('DEL', key)
  elseif tonumber(redis.call('GET', key) or '0') > 1 then
    redis.call('DECR', key)
  else
    redis.call('DEL', key)
  end
end
return 0`;

export function createLogin(deps: LoginDeps) {
  const { redis, keys, clock, lockSeconds } = deps;
  const isRefusedDemoLogin = publicDemoLoginCheck(deps.allowPublicDemo === true);

  /** The counters an attempt counts on, each with its limit; a name that is never a user has none. */
  function countersOf(env: string, username: string | undefined, clientAddress: string) {
    const address = addressGroup(clientAddress);
    const counters = [{ key: keys.loginFailures(env, '', address), limit: deps.maxFailuresPerAddress }];
    if (username === undefined) return counters;
    return [
      { key: keys.loginFailures(env, username, address), limit: deps.maxFailures },
      { key: keys.loginFailures(env, username), limit: deps.maxFailuresPerUser },
      ...counters,
    ];
  }
  type Counters = ReturnType<typeof countersOf>;

  /** Undefined when the attempt may go on; else the seconds until it could. */
  async function reserve(counters: Counters): Promise<number | undefined> {
    const waitMs = Number(
      await redis.eval(
        RESERVE_ATTEMPT,
        counters.length,
        ...counters.map((c) => c.key),
        lockSeconds * 1000,
        ...counters.map((c) => c.limit),
      ),
    );
    return waitMs > 0 ? Math.max(1, Math.ceil(waitMs / 1000)) : undefined;
  }

  /** Gives a reservation back; `clearFirst` counters are reset rather than decremented. */
  async function release(counters: Counters, clearFirst: number): Promise<void> {
    await redis.eval(RELEASE_ATTEMPT, counters.length, ...counters.map((c) => c.key), clearFirst);
  }

  /** Accepts a valid code once: a second login with the same code (a replay) fails. */
  async function useTotp(env: string, username: string, secret: string, code: string, nowMs: number) {
    const step = totpStep(secret, code, nowMs);
    if (step === null) return false;
    // Kept for the ±1-step window (90 s) plus a margin.
    return (await redis.set(keys.totpUsed(env, username, step), '1', 'PX', 120_000, 'NX')) === 'OK';
  }

  async function verifyLogin(attempt: LoginAttempt): Promise<LoginResult> {
    const { env, username, password, totp, clientAddress, nowMs } = attempt;
    if (isRefusedDemoLogin(env, username, password))
      return { ok: false, code: 'INVALID_CREDENTIALS', message: PUBLIC_DEMO_REFUSALS.login };
    // A name that can never be a user gets no counter of its own (attackers cannot fill Redis with
    // keys named by them); it still counts for its address.
    const possibleUser = isValidName('username', username) && password.length <= MAX_PASSWORD_LENGTH;
    const counters = countersOf(env, possibleUser ? username : undefined, clientAddress);
    const retryAfterSeconds = await reserve(counters);
    if (retryAfterSeconds !== undefined) return { ok: false, code: 'LOGIN_LOCKED', retryAfterSeconds };
    const user = possibleUser ? decodeUser(await redis.hget(keys.users(env), username)) : null;
    // The same scrypt work whether or not the user exists, so the answer takes as long.
    const passwordOk = await verifyPassword(
      password.slice(0, MAX_PASSWORD_LENGTH),
      user?.passwordHash ?? DUMMY_PASSWORD_HASH,
    );
    // A failure keeps its reservation: that is the count.
    if (!user || !passwordOk) return { ok: false, code: 'INVALID_CREDENTIALS' };
    // Said only to whoever knows the password, and not a guess: the reservation is given back.
    if (user.disabled === true) {
      await release(counters, 0);
      return { ok: false, code: 'ACCOUNT_DISABLED' };
    }
    if (user.mfaEnabled && user.mfaSecret) {
      if (totp === undefined || totp === '') {
        await release(counters, 0);
        return { ok: false, code: 'MFA_REQUIRED' };
      }
      if (!(await useTotp(env, username, user.mfaSecret, totp, nowMs)))
        return { ok: false, code: 'INVALID_CREDENTIALS' };
    }
    await release(counters, 1);
    return { ok: true, generation: user.generation ?? '' };
  }

  /**
   * A login token carrying the scopes of the user's role (resolving narrows them to the role's then),
   * bound to the credential generation its login was checked against.
   */
  async function createLoginToken(env: string, username: string, ttlSeconds: number, generation: string) {
    const user = decodeUser(await redis.hget(keys.users(env), username));
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
      scopes: user ? ROLE_SCOPES[roleOf(user)] : [],
      generation,
    };
    const key = keys.token(hash);
    await redis.multi().hset(key, encodeToken(record)).pexpireat(key, record.expiresMs).exec();
    return { token, expiresUTC: new Date(record.expiresMs).toISOString() };
  }

  return { verifyLogin, createLoginToken };
}

/**
 * What the address counters count by: an IPv4 address (also when IPv4-mapped), an IPv6 address's
 * /64 (one subscriber commonly holds a whole /64), and 'unknown' for anything else (say, junk in a
 * trusted X-Forwarded-For), so junk never names keys and all of it shares one limit.
 */
export function addressGroup(address: string): string {
  if (!ipaddr.isValid(address)) return 'unknown';
  const ip = ipaddr.process(address);
  if (ip.kind() === 'ipv4') return ip.toString();
  const parts = (ip as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16));
  return `${parts.join(':')}::/64`;
}
