/**
 * What a notification channel is: its input (from the CLI or a provisioning file), checked with
 * zod, and its stored record, whose secrets (signing secrets, webhook and Slack URLs, header
 * values) are kept only encrypted (secret-box.ts).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';

export const CHANNEL_TYPES = ['webhook', 'slack', 'email'] as const;
export type ChannelType = (typeof CHANNEL_TYPES)[number];

/** Channel and route names: 1-64 letters, digits, `_ . -` (they are listed comma-separated). */
export const ALERTING_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

const nameOf = (what: string) =>
  z.string().regex(ALERTING_NAME, `invalid ${what} name: use 1-64 letters, digits, '_', '.' and '-'`);

/** Headers Vigil sets itself on every webhook. */
const RESERVED_HEADERS = new Set([
  'webhook-id',
  'webhook-timestamp',
  'webhook-signature',
  'content-type',
  'content-length',
  'host',
  'transfer-encoding',
  'connection',
]);

const headerName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/, 'invalid header name')
  .refine((n) => !RESERVED_HEADERS.has(n.toLowerCase()), 'this header is set by Vigil');
// No control characters: a value with CR/LF would smuggle further headers.
const headerValue = z
  .string()
  .max(4096)
  .regex(/^[^\p{Cc}]*$/u, 'header values cannot hold control characters');

const httpUrl = z
  .string()
  .max(2048)
  .refine(
    (u) => URL.canParse(u) && /^https?:$/.test(new URL(u).protocol),
    'expected an http:// or https:// URL',
  );

const emailAddress = z.string().regex(/^[^\s@,;<>"]+@[^\s@,;<>"]+\.?[^\s@,;<>"]*$/, 'invalid email address');

/** A signing secret as Standard Webhooks writes it: `whsec_` + base64 of 24-64 bytes. */
export const SIGNING_SECRET = /^whsec_[A-Za-z0-9+/]{32,88}={0,2}$/;

export const channelInput = z.discriminatedUnion('type', [
  z
    .object({
      name: nameOf('channel'),
      type: z.literal('webhook'),
      url: httpUrl,
      headers: z
        .array(z.tuple([headerName, headerValue]))
        .max(20)
        .default([]),
      /** Provisioning may fix the secret; otherwise one is generated. */
      secret: z.string().regex(SIGNING_SECRET, 'expected whsec_ and the base64 of 24-64 bytes').optional(),
    })
    .strict(),
  z.object({ name: nameOf('channel'), type: z.literal('slack'), url: httpUrl }).strict(),
  z
    .object({
      name: nameOf('channel'),
      type: z.literal('email'),
      to: z.array(emailAddress).min(1, 'give at least one address').max(50),
    })
    .strict(),
]);
export type ChannelInput = z.input<typeof channelInput>;
export type CheckedChannelInput = z.output<typeof channelInput>;

/** A channel as stored in `AlertingKeys.channels` (secrets sealed). */
export interface ChannelRecord {
  /** Random, fixed for the channel's life: notification ids derive from it. */
  id: string;
  name: string;
  type: ChannelType;
  createdUTC: string;
  /** webhook, as stored before URLs were sealed: the URL in clear (read as it is; sealed on the next rotation). */
  url?: string;
  /**
   * webhook: the URL, sealed (its user, password and query may be credentials); slack: the
   * incoming-webhook URL, sealed (it holds Slack's token).
   */
  sealedUrl?: string;
  /** webhook: the URL as listings show it, credentials masked (url-secrets.ts). */
  shownUrl?: string;
  /** webhook: headers with sealed values. */
  headers?: { name: string; sealedValue: string }[];
  /** webhook: the signing secret, sealed. */
  sealedSecret?: string;
  /** webhook, after a rotation: the previous secret, signed with as well until `untilMs`. */
  previousSecret?: { sealed: string; untilMs: number };
  /** email: recipients. */
  to?: string[];
}

/** A channel ready for delivery: secrets in clear, only in memory. */
export type OpenChannel =
  | {
      type: 'webhook';
      id: string;
      name: string;
      url: string;
      headers: [string, string][];
      /** Current secret first; the previous one while its grace period lasts. */
      secrets: string[];
    }
  | { type: 'slack'; id: string; name: string; url: string }
  | { type: 'email'; id: string; name: string; to: string[] };

export const generateChannelId = (): string => randomBytes(6).toString('hex');

/** A new signing secret: `whsec_` + 32 random bytes, base64. */
export const generateSigningSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** Parses `Name: value` (the CLI's --header). */
export function parseHeaderOption(text: string): [string, string] | undefined {
  const i = text.indexOf(':');
  if (i <= 0) return undefined;
  return [text.slice(0, i).trim(), text.slice(i + 1).trim()];
}
