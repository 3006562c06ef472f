import { describe, expect, it } from 'vitest';
import {
  DUMMY_PASSWORD_HASH,
  generateApiKey,
  generateToken,
  generateTotpSecret,
  hashPassword,
  safeEqual,
  sha256Hex,
  totpCode,
  totpStep,
  totpUri,
  verifyPassword,
  verifyTotp,
} from '../../../src/tenancy/secrets.ts';

describe('API keys and tokens', () => {
  it('are vk_/vt_ plus 32 random bytes in base64url (43 characters)', () => {
    const key = generateApiKey();
    const token = generateToken();
    expect(key).toMatch(/^vk_[A-Za-z0-9_-]{43}$/);
    expect(token).toMatch(/^vt_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(3), 'base64url')).toHaveLength(32);
    expect(generateApiKey()).not.toBe(key);
  });

  it('are addressed by their SHA-256 hex', () => {
    expect(sha256Hex('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('compares secrets in constant time, refusing different lengths', () => {
    expect(safeEqual('abc', 'abc')).toBe(true);
    expect(safeEqual('abc', 'abd')).toBe(false);
    expect(safeEqual('abc', 'abcd')).toBe(false);
    expect(safeEqual('abcd', 'abc')).toBe(false);
    expect(safeEqual('', '')).toBe(true);
    expect(safeEqual('', 'a')).toBe(false);
    // Same number of characters, different bytes.
    expect(safeEqual('é', 'e\u0301')).toBe(false);
    expect(safeEqual('ab', 'é')).toBe(false);
  });
});

describe('passwords', () => {
  it('are stored as scrypt$N$r$p$salt$hash and verify only with the right password', async () => {
    const stored = await hashPassword('correct horse');
    expect(stored).toMatch(/^scrypt\$16384\$8\$1\$[A-Za-z0-9+/=]+\$[A-Za-z0-9+/=]+$/);
    expect(stored).not.toContain('correct horse');
    expect(await verifyPassword('correct horse', stored)).toBe(true);
    expect(await verifyPassword('correct horsE', stored)).toBe(false);
    for (const near of ['correct hors', 'correct horse ', 'correct horsecorrect horse', ''])
      expect(await verifyPassword(near, stored)).toBe(false);
    expect(await hashPassword('correct horse')).not.toBe(stored);
  });

  it('never match a malformed hash or the dummy used for unknown users', async () => {
    for (const bad of [
      '',
      'plain',
      'scrypt$x$8$1$AA==$AA==',
      'argon2$1$2$3$AA==$AA==',
      'scrypt$16384$8$1$AA==$',
    ]) {
      expect(await verifyPassword('anything', bad)).toBe(false);
    }
    expect(await verifyPassword('', DUMMY_PASSWORD_HASH)).toBe(false);
  });
});

describe('TOTP (RFC 6238, 6 digits, 30 s, ±1 step)', () => {
  const secret = generateTotpSecret();
  const now = Date.UTC(2026, 10, 22, 12, 0, 10);

  it('accepts the current code and those of the neighbouring steps', () => {
    expect(verifyTotp(secret, totpCode(secret, now), now)).toBe(true);
    expect(verifyTotp(secret, totpCode(secret, now - 30_000), now)).toBe(true);
    expect(verifyTotp(secret, totpCode(secret, now + 30_000), now)).toBe(true);
  });

  it('refuses codes two steps away and anything that is not six digits', () => {
    expect(verifyTotp(secret, totpCode(secret, now - 60_000), now)).toBe(false);
    expect(verifyTotp(secret, totpCode(secret, now + 60_000), now)).toBe(false);
    expect(verifyTotp(secret, '12345', now)).toBe(false);
    expect(verifyTotp(secret, 'abcdef', now)).toBe(false);
  });

  it('matches the RFC 6238 SHA-1 test vector', () => {
    // RFC 6238 appendix B: secret "12345678901234567890", T = 59 s → 94287082 (8 digits; 6 = 287082).
    const rfcSecret = 'GEZDGNBVGY3TQOJQGEZDGNBVGY3TQOJQ';
    expect(totpCode(rfcSecret, 59_000)).toBe('287082');
  });

  it('builds an otpauth URI with issuer, label and parameters', () => {
    const uri = totpUri(secret, 'Vigil', 'demo:alice');
    expect(uri).toMatch(/^otpauth:\/\/totp\/Vigil:demo%3Aalice\?/);
    expect(uri).toContain(`secret=${secret}`);
    expect(uri).toContain('digits=6');
    expect(uri).toContain('period=30');
  });
});

describe('totpStep', () => {
  it('names the 30 s step a valid code belongs to, so a second use can be refused', () => {
    const secret = generateTotpSecret();
    const now = 1_800_000_015_000;
    const step = Math.floor(now / 30_000);
    expect(totpStep(secret, totpCode(secret, now), now)).toBe(step);
    expect(totpStep(secret, totpCode(secret, now - 30_000), now)).toBe(step - 1);
    expect(totpStep(secret, totpCode(secret, now + 30_000), now)).toBe(step + 1);
    expect(totpStep(secret, '000000x', now)).toBeNull();
  });
});
