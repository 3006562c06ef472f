/**
 * Secrets at rest: channel secrets (signing secrets, Slack URLs, header values) are stored
 * encrypted with AES-256-GCM under VIGIL_SECRETS_KEY, each with its own random 12-byte nonce; the
 * authentication tag makes a changed ciphertext or a wrong key fail instead of decrypting to junk.
 * Stored form: `aes256gcm:<base64 of nonce | tag | ciphertext>`.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { AppError } from '../errors/app-error.ts';

const PREFIX = 'aes256gcm:';
const NONCE_BYTES = 12;
const TAG_BYTES = 16;

export interface SecretBox {
  /** Encrypts `plain`; SECRETS_KEY_MISSING without a key. */
  seal(plain: string): string;
  /** Decrypts what `seal` made; SECRETS_KEY_MISSING without a key or with another key. */
  open(sealed: string): string;
  /** True when a key is configured. */
  readonly hasKey: boolean;
}

const missing = () =>
  new AppError(
    'SECRETS_KEY_MISSING',
    'VIGIL_SECRETS_KEY is not set: channel secrets are stored encrypted with it (create one with `openssl rand -base64 32`)',
  );

/** `keyBase64`: the base64 of 32 bytes (config `secretsKey`), or undefined. */
export function createSecretBox(keyBase64: string | undefined): SecretBox {
  const key = keyBase64 === undefined ? undefined : Buffer.from(keyBase64, 'base64');
  return {
    hasKey: key !== undefined,
    seal(plain) {
      if (!key) throw missing();
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return PREFIX + Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64');
    },
    open(sealed) {
      if (!key) throw missing();
      if (!sealed.startsWith(PREFIX))
        throw new AppError('INTERNAL', 'a stored channel secret is not encrypted');
      const raw = Buffer.from(sealed.slice(PREFIX.length), 'base64');
      const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, NONCE_BYTES));
      decipher.setAuthTag(raw.subarray(NONCE_BYTES, NONCE_BYTES + TAG_BYTES));
      try {
        return Buffer.concat([
          decipher.update(raw.subarray(NONCE_BYTES + TAG_BYTES)),
          decipher.final(),
        ]).toString('utf8');
      } catch (err) {
        throw new AppError(
          'SECRETS_KEY_MISSING',
          'a channel secret cannot be decrypted: VIGIL_SECRETS_KEY is not the key it was stored with',
          { cause: err },
        );
      }
    },
  };
}
