/**
 * How an HTTP answer or a network failure becomes a delivery outcome: 2xx delivered; 408, 429
 * and 5xx retried (429 after its Retry-After); other answers (3xx: redirects are not followed,
 * other 4xx) refused for good; network errors and timeouts retried.
 */
import { messageOf } from '../../lib/message-of.ts';
import type { DeliveryOutcome } from '../deliverer.ts';
import type { HttpAnswer } from './pinned-request.ts';

/** Longest Retry-After honoured; a longer one waits this long. */
const MAX_RETRY_AFTER_MS = 24 * 3600_000;

/** Milliseconds of a Retry-After header (seconds or an HTTP date), or undefined. */
export function retryAfterMs(header: string | string[] | undefined, nowMs: number): number | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || value.trim() === '') return undefined;
  const ms = /^\d+$/.test(value.trim()) ? Number(value.trim()) * 1000 : Date.parse(value) - nowMs;
  if (!Number.isFinite(ms)) return undefined;
  return Math.min(Math.max(ms, 0), MAX_RETRY_AFTER_MS);
}

const oneLine = (s: string, max = 200) => s.replace(/\s+/g, ' ').trim().slice(0, max);

export function httpOutcome(answer: HttpAnswer, nowMs: number): DeliveryOutcome {
  const { status } = answer;
  const body = answer.body;
  const summary = `HTTP ${status}${body ? ` ${oneLine(body, 120)}` : ''}`;
  if (status >= 200 && status < 300) return { ok: true, answer: summary, status, retryable: false, body };
  if (status >= 300 && status < 400) {
    const location = answer.headers.location;
    return {
      ok: false,
      answer: `HTTP ${status} redirect${location ? ` to ${oneLine(String(location), 120)}` : ''} not followed`,
      status,
      retryable: false,
      body,
    };
  }
  const retryable = status === 408 || status === 429 || status >= 500;
  const after = status === 429 ? retryAfterMs(answer.headers['retry-after'], nowMs) : undefined;
  return {
    ok: false,
    answer: summary,
    status,
    retryable,
    ...(after === undefined ? {} : { retryAfterMs: after }),
    body,
  };
}

/** A network failure or timeout: always worth another attempt. */
export function networkOutcome(err: unknown): DeliveryOutcome {
  const code = (err as NodeJS.ErrnoException).code;
  const message = messageOf(err);
  return {
    ok: false,
    answer: oneLine(code && !message.includes(code) ? `${code}: ${message}` : message),
    retryable: true,
  };
}
