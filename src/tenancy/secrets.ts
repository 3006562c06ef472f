/**
 * Secrets of the tenancy: API keys and bearer tokens (random, stored as SHA-256 hex), passwords
 * (scrypt) and TOTP second factors (RFC 6238). Every comparison of secret material is
 * constant-time.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { Secret, TOTP } from 'otpauth';
import { sha256Hex } from '../lib/sha256.ts';

export { sha256Hex };

/** A new API key: `vk_` + 32 random bytes, base64url. */
export const generateApiKey = (): string => `vk_${randomBytes(32).toString('base64url')}`;

/** A new bearer token: `vt_` + 32 random bytes, base64url. */
export const generateToken = (): string => `vt_${randomBytes(32).toString('base64url')}`;

/** A new credential generation of a user (UserRecord.generation): 16 random bytes, base64url. */
export const generateGeneration = (): string => randomBytes(16).toString('base64url');

/** Public identifier of a key or token: the first 12 hex digits of its hash (stable, not secret). */
export const secretId = (hash: string): string => hash.slice(0, 12);

/** Constant-time string equality (lengths are compared first, which reveals only the length). */
export function safeEqual(a: string, b: string): boolean {
  const ba = Buffer.from(a);
  const bb = Buffer.from(b);
  return ba.length === bb.length && timingSafeEqual(ba, bb);
}

const SCRYPT = { N: 16384, r: 8, p: 1, keyLength: 32, saltBytes: 16 };

function scryptAsync(password: string, salt: Buffer, keyLength: number, options: ScryptOptions) {
  return new Promise<Buffer>((resolve, reject) => {
    scrypt(password, salt, keyLength, options, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

const scryptOptions = (N: number, r: number, p: number): ScryptOptions => ({
  N,
  r,
  p,
  maxmem: 256 * N * r + 1024 * 1024,
});

/** Hashes a password as `scrypt$N$r$p$saltB64$hashB64`. */
export async function hashPassword(password: string): Promise<string> {
  const { N, r, p, keyLength, saltBytes } = SCRYPT;
  const salt = randomBytes(saltBytes);
  const key = await scryptAsync(password, salt, keyLength, scryptOptions(N, r, p));
  return ['scrypt', N, r, p, salt.toString('base64'), key.toString('base64')].join('$');
}

/** True when `password` matches a hash made by {@link hashPassword}; false for a malformed hash. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number) as [number, number, number];
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0)) return false;
  const salt = Buffer.from(parts[4] ?? '', 'base64');
  const expected = Buffer.from(parts[5] ?? '', 'base64');
  if (expected.length === 0) return false;
  const actual = await scryptAsync(password, salt, expected.length, scryptOptions(N, r, p));
  return timingSafeEqual(actual, expected);
}

/**
 * A password hash that matches nothing, verified against when the user does not exist so that
 * a login for an unknown username costs the same time as one for a known username.
 */
export const DUMMY_PASSWORD_HASH = `scrypt$${SCRYPT.N}$${SCRYPT.r}$${SCRYPT.p}$${Buffer.alloc(16).toString('base64')}$${Buffer.alloc(32).toString('base64')}`;

/** TOTP parameters (docs/interface.md#mfa): SHA-1, 6 digits, 30 s steps, ±1 step accepted. */
const TOTP_PARAMS = { algorithm: 'SHA1', digits: 6, period: 30 } as const;

/** A new base32 TOTP secret (160 bits, the RFC 4226 recommendation). */
export const generateTotpSecret = (): string => new Secret({ size: 20 }).base32;

/** The otpauth:// URI an authenticator app scans. */
export function totpUri(secretBase32: string, issuer: string, label: string): string {
  return new TOTP({ ...TOTP_PARAMS, issuer, label, secret: Secret.fromBase32(secretBase32) }).toString();
}

/** The code for a moment (tests and the CLI's self-check). */
export function totpCode(secretBase32: string, nowMs: number): string {
  return new TOTP({ ...TOTP_PARAMS, secret: Secret.fromBase32(secretBase32) }).generate({ timestamp: nowMs });
}

/**
 * The 30 s time step `code` belongs to when it is valid at `nowMs` or one step before or after,
 * else null. The step lets the caller refuse a second use of the same code.
 */
export function totpStep(secretBase32: string, code: string, nowMs: number): number | null {
  if (!/^\d{6}$/.test(code)) return null;
  const totp = new TOTP({ ...TOTP_PARAMS, secret: Secret.fromBase32(secretBase32) });
  // otpauth compares with a constant-time equality of its own.
  const delta = totp.validate({ token: code, timestamp: nowMs, window: 1 });
  return delta === null ? null : Math.floor(nowMs / 1000 / TOTP_PARAMS.period) + delta;
}

/** True when `code` is valid at `nowMs` or one 30 s step before or after. */
export const verifyTotp = (secretBase32: string, code: string, nowMs: number): boolean =>
  totpStep(secretBase32, code, nowMs) !== null;
