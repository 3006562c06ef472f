import { describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../../src/ingest/rate-limiter.ts';
import { createIngestId, ingestIdTimeMs } from '../../../src/ingest/ingest-id.ts';
import { isPlausibleApiKey } from '../../../src/ingest/api-keys.ts';

describe('rate limiter', () => {
  it('allows a burst of one second’s worth, then refills at the configured rate', () => {
    let now = 0;
    const limiter = createRateLimiter({ perSecond: 2, now: () => now });
    expect([limiter.take('k'), limiter.take('k'), limiter.take('k')]).toEqual([0, 0, 1]);
    expect(limiter.take('other')).toBe(0);
    now = 500;
    expect(limiter.take('k')).toBe(0);
    expect(limiter.take('k')).toBe(1);
  });

  it('never limits when the rate is 0', () => {
    const limiter = createRateLimiter({ perSecond: 0 });
    for (let i = 0; i < 1000; i++) expect(limiter.take('k')).toBe(0);
  });

  it('keeps at most maxKeys buckets', () => {
    const limiter = createRateLimiter({ perSecond: 1, maxKeys: 2, now: () => 0 });
    expect(limiter.take('a')).toBe(0);
    expect(limiter.take('b')).toBe(0);
    expect(limiter.take('c')).toBe(0);
    // 'a' was dropped, so it starts with a full bucket again.
    expect(limiter.take('a')).toBe(0);
  });
});

describe('ingest ids', () => {
  it('are unique, 17 characters, and sort by receive time', () => {
    const ids = new Set(Array.from({ length: 10_000 }, () => createIngestId(1_700_000_000_000)));
    expect(ids.size).toBe(10_000);
    const early = createIngestId(1_700_000_000_000);
    const late = createIngestId(1_700_000_000_001);
    expect(early.length).toBe(17);
    expect(early.slice(0, 9) < late.slice(0, 9)).toBe(true);
    expect(ingestIdTimeMs(late)).toBe(1_700_000_000_001);
  });
});

describe('API key shape', () => {
  it.each([
    ['vk_' + 'A'.repeat(43), true],
    ['vk_abc-_XYZ09', true],
    ['vk_', false],
    ['abc', false],
    ['vk_a/b', false],
    ['vk_a%2Fb', false],
    ['vk_' + 'a'.repeat(126), false],
    ['../../etc', false],
  ])('%s plausible: %s', (key, ok) => {
    expect(isPlausibleApiKey(key)).toBe(ok);
  });
});
