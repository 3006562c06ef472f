import { describe, expect, it } from 'vitest';
import { httpOutcome, retryAfterMs } from '../../../src/alerting/delivery/http-outcome.ts';
import { signatures } from '../../../src/alerting/delivery/http-delivery.ts';
import { notificationId } from '../../../src/alerting/notification.ts';
import { scheduleBackoff } from '../../../src/alerting/notification-queue.ts';
import { createSecretBox } from '../../../src/alerting/secret-box.ts';
import { formatDurationMs, parseDurationMs } from '../../../src/lib/duration.ts';
import { Webhook } from 'standardwebhooks';

const answer = (status: number, headers: Record<string, string> = {}) =>
  httpOutcome({ status, headers, body: 'b' }, 0);

describe('delivery rules', () => {
  it.each([
    [200, true, false],
    [204, true, false],
    [301, false, false],
    [400, false, false],
    [404, false, false],
    [408, false, true],
    [410, false, false],
    [429, false, true],
    [500, false, true],
    [503, false, true],
  ])('HTTP %i: delivered %s, retried %s', (status, ok, retryable) => {
    expect(answer(status)).toMatchObject({ ok, retryable, status });
  });

  it('reads Retry-After as seconds or an HTTP date, bounded', () => {
    expect(answer(429, { 'retry-after': '7' }).retryAfterMs).toBe(7000);
    expect(retryAfterMs(new Date(60_000).toUTCString(), 0)).toBe(60_000);
    expect(retryAfterMs('999999999', 0)).toBe(24 * 3600_000);
    expect(retryAfterMs('soon', 0)).toBeUndefined();
    expect(answer(503, { 'retry-after': '7' }).retryAfterMs).toBeUndefined();
  });

  it('follows the retry schedule, or the receiver asking to wait', () => {
    const backoff = scheduleBackoff([5000, 300_000, 1_800_000]);
    expect([1, 2, 3, 4].map((n) => backoff(n))).toEqual([5000, 300_000, 1_800_000, 1_800_000]);
    expect(backoff(1, 'x', Object.assign(new Error('429'), { retryAfterMs: 2000 }))).toBe(2000);
  });

  it('signs as Standard Webhooks verifies, one signature per secret', () => {
    const [a, b] = [
      'whsec_' + Buffer.alloc(32, 1).toString('base64'),
      'whsec_' + Buffer.alloc(32, 2).toString('base64'),
    ];
    const at = new Date();
    const header = signatures([a, b], 'msg_1', at, '{"x":1}');
    expect(header.split(' ')).toHaveLength(2);
    const headers = {
      'webhook-id': 'msg_1',
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': header,
    };
    for (const s of [a, b]) expect(new Webhook(s).verify('{"x":1}', headers)).toEqual({ x: 1 });
  });

  it('signs a body with non-ASCII text exactly as the standardwebhooks package does', () => {
    const secret = 'whsec_' + Buffer.from('a secret of some length, 32 b!!').toString('base64');
    const body = '{"eventMessage":"t - Above 25 °C - WARNING - 26.0 °C","name":"Küche ✓"}';
    const at = new Date(1_795_000_000_123);
    expect(signatures([secret], 'msg_ü', at, body)).toBe(new Webhook(secret).sign('msg_ü', at, body));
  });

  it('derives notification ids from kind, channel and subject', () => {
    expect(notificationId('event', 'c1', 'e1')).toBe(notificationId('event', 'c1', 'e1'));
    expect(notificationId('event', 'c1', 'e1')).not.toBe(notificationId('event', 'c2', 'e1'));
    expect(notificationId('event', 'c1', 'e1')).not.toBe(notificationId('reminder', 'c1', 'e1'));
    expect(notificationId('digest', 'c1', 'b')).toMatch(/^digest_[0-9a-f]{32}$/);
  });

  it('seals secrets with AES-256-GCM: random nonce, tamper and wrong key detected, no key refused', () => {
    const box = createSecretBox(Buffer.alloc(32, 9).toString('base64'));
    const one = box.seal('s3cret');
    expect(one).toMatch(/^aes256gcm:/);
    expect(one).not.toContain('s3cret');
    expect(box.seal('s3cret')).not.toBe(one);
    expect(box.open(one)).toBe('s3cret');
    const raw = Buffer.from(one.slice('aes256gcm:'.length), 'base64');
    raw[raw.length - 1] = (raw[raw.length - 1] ?? 0) ^ 1;
    const refused = expect.objectContaining({ code: 'SECRETS_KEY_MISSING' }) as Error;
    expect(() => box.open(`aes256gcm:${raw.toString('base64')}`)).toThrow(refused);
    expect(() => createSecretBox(Buffer.alloc(32, 8).toString('base64')).open(one)).toThrow(refused);
    expect(() => createSecretBox(undefined).seal('x')).toThrow(refused);
  });

  it('reads and writes durations', () => {
    expect(['500ms', '5s', '5m', '2h', '1d', '1w', '250'].map(parseDurationMs)).toEqual([
      500, 5000, 300_000, 7_200_000, 86_400_000, 604_800_000, 250,
    ]);
    expect(['', 'soon', '5 m', '-1s'].map(parseDurationMs)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect([3_600_000, 1500, 90_000].map(formatDurationMs)).toEqual(['1h', '1500ms', '90s']);
  });
});
