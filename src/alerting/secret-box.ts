/**
 * Secrets at rest: channel secrets (signing secrets, Slack URLs, header values) are stored
 * encrypted with AES-256-GCM under VIGIL_SECRETS_KEY, each with its own random 12-byte nonce; the
 * authentication tag makes a changed ciphertext or a wrong key fail instead of decrypting to junk.
 * Stored form: `aes256gcm:<base64 of nonce | tag | ciphertext>`.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { AppError } from '../errors/app-error.ts';
import type { SettingSource } from '../config/setting-source.ts';
import { DEMO_SETTINGS_FILE } from '../config/public-demo.ts';

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

// The key must be the one the secrets were stored with, so the advice is where to find that key:
// a new one (the advice this used to give) cannot read them, the demo's included.
const USE_THE_SERVICES_KEY = `Use the key the service runs with (\`npm run demo\`'s is in ${DEMO_SETTINGS_FILE}: \`VIGIL_CONFIG_FILE=${DEMO_SETTINGS_FILE} npx vigil …\`)`;

/** Where the key was looked for: " in the environment or <file>", or " (empty in <where>)". */
const lookedIn = (source: SettingSource | undefined): string =>
  source === undefined ? '' : source.set ? ` (empty in ${source.where})` : ` in ${source.where}`;

const missing = (source: SettingSource | undefined) =>
  new AppError(
    'SECRETS_KEY_MISSING',
    `VIGIL_SECRETS_KEY is not set${lookedIn(source)}: channel secrets are stored encrypted with it. ${USE_THE_SERVICES_KEY}. A new key (\`openssl rand -base64 32\`) is only for an installation without channel secrets: it cannot read secrets stored under another.`,
  );

const wrongKey = (source: SettingSource | undefined, cause: unknown) =>
  new AppError(
    'SECRETS_KEY_MISSING',
    `a channel secret cannot be decrypted: VIGIL_SECRETS_KEY${source === undefined ? '' : ` (set in ${source.where})`} is not the key it was stored with. ${USE_THE_SERVICES_KEY}. Changing the key leaves every secret stored under the old one unreadable until its channel is created again.`,
    { cause },
  );

/**
 * `keyBase64`: the base64 of 32 bytes (config `secretsKey`), or undefined; `source`: where it is
 * set (`settingSource(config, 'secretsKey')`), which the refusals name.
 */
export function createSecretBox(keyBase64: string | undefined, source?: SettingSource): SecretBox {
  const key = keyBase64 === undefined ? undefined : Buffer.from(keyBase64, 'base64');
  return {
    hasKey: key !== undefined,
    seal(plain) {
      if (!key) throw missing(source);
      const nonce = randomBytes(NONCE_BYTES);
      const cipher = createCipheriv('aes-256-gcm', key, nonce);
      const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
      return PREFIX + Buffer.concat([nonce, cipher.getAuthTag(), body]).toString('base64');
    },
    open(sealed) {
      if (!key) throw missing(source);
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
        throw wrongKey(source, err);
      }
    },
  };
}
