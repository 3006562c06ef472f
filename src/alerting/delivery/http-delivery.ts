/**
 * Webhook and Slack delivery: both POST JSON over HTTP(S) to a URL that passes the SSRF guard
 * again at every attempt (an address can change after creation), connecting to the checked
 * address. Webhooks follow the Standard Webhooks specification: `webhook-id` (the same on every
 * attempt), `webhook-timestamp` (this attempt, seconds) and `webhook-signature` (`v1,<base64
 * HMAC-SHA256 of id.timestamp.body>`, one per valid secret, space-separated).
 */
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { AddressGuard } from '../address-guard.ts';
import type { DeliveryOutcome, Deliver } from '../deliverer.ts';
import type { OpenChannel } from '../channel-spec.ts';
import { slackMessage, webhookBody } from '../messages.ts';
import { redactUrlSecrets } from '../url-secrets.ts';
import { httpOutcome, networkOutcome } from './http-outcome.ts';
import type { PinnedPoster } from './pinned-request.ts';

export interface HttpDeliveryDeps {
  guard: AddressGuard;
  poster: PinnedPoster;
  timeoutMs: number;
  clock?: () => number;
}

const USER_AGENT = 'Vigil-Notifier/1';

async function postJson(
  deps: HttpDeliveryDeps,
  url: string,
  headers: (body: string) => Record<string, string>,
  body: string,
): Promise<DeliveryOutcome> {
  const checked = await deps.guard.check(url);
  if (!checked.ok) return { ok: false, answer: `not sent: ${checked.reason}`, retryable: checked.retryable };
  try {
    const answer = await deps.poster.post(
      checked.target,
      { 'content-type': 'application/json', 'user-agent': USER_AGENT, ...headers(body) },
      body,
      deps.timeoutMs,
    );
    return httpOutcome(answer, (deps.clock ?? Date.now)());
  } catch (err) {
    return networkOutcome(err);
  }
}

/**
 * The outcome with the URL's credentials masked in what is shown and logged: a receiver's answer
 * may echo the URL it was asked for. `withPath`: the path is a secret too (Slack's).
 */
function masked(outcome: DeliveryOutcome, url: string, withPath: boolean): DeliveryOutcome {
  const answer = redactUrlSecrets(outcome.answer, url, withPath);
  if (outcome.body === undefined) return { ...outcome, answer };
  return { ...outcome, answer, body: redactUrlSecrets(outcome.body, url, withPath) };
}

const SECRET_PREFIX = 'whsec_';

/** Signing keys made from secrets: node:crypto makes a key object for every raw key it is given. */
const signingKeys = new LRUCache<string, KeyObject>({ max: 1000 });

function signingKey(secret: string): KeyObject {
  let key = signingKeys.get(secret);
  if (!key) {
    const encoded = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret;
    key = createSecretKey(Buffer.from(encoded, 'base64'));
    signingKeys.set(secret, key);
  }
  return key;
}

/**
 * The `webhook-signature` value: one `v1,<signature>` per secret, the signature being the base64
 * HMAC-SHA256, keyed with the secret's base64-decoded bytes, of `<id>.<timestamp seconds>.<body>`
 * (what the `standardwebhooks` package's `Webhook.sign` makes, as the tests check; node:crypto's
 * HMAC costs a tenth of its JavaScript SHA-256 per notification).
 */
export function signatures(secrets: string[], id: string, at: Date, body: string): string {
  const signed = `${id}.${Math.floor(at.getTime() / 1000)}.${body}`;
  return secrets
    .map((s) => `v1,${createHmac('sha256', signingKey(s)).update(signed).digest('base64')}`)
    .join(' ');
}

export function createWebhookDelivery(
  deps: HttpDeliveryDeps,
): Deliver<Extract<OpenChannel, { type: 'webhook' }>> {
  const clock = deps.clock ?? Date.now;
  return (channel, content, id) => {
    const body = webhookBody(content);
    const outcome = postJson(
      deps,
      channel.url,
      () => {
        const at = new Date(clock());
        return {
          ...Object.fromEntries(channel.headers),
          'webhook-id': id,
          'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
          'webhook-signature': signatures(channel.secrets, id, at, body),
        };
      },
      body,
    );
    return outcome.then((o) => masked(o, channel.url, false));
  };
}

export function createSlackDelivery(
  deps: HttpDeliveryDeps,
): Deliver<Extract<OpenChannel, { type: 'slack' }>> {
  return async (channel, content) =>
    masked(
      await postJson(deps, channel.url, () => ({}), JSON.stringify(slackMessage(content))),
      channel.url,
      true,
    );
}
