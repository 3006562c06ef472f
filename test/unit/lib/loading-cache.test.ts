import { describe, expect, it } from 'vitest';
import { createLoadingCache } from '../../../src/lib/loading-cache.ts';

describe('loading cache', () => {
  it('caches answers, negative ones too, for ttlMs and then loads again', async () => {
    let now = 1000;
    let loads = 0;
    const cache = createLoadingCache<string | null>({ ttlMs: 100, max: 10, now: () => now });
    const load = () => Promise.resolve((loads++, null));
    expect(await cache.get('k', load)).toBeNull();
    expect(await cache.get('k', load)).toBeNull();
    expect(loads).toBe(1);
    now = 1101;
    await cache.get('k', load);
    expect(loads).toBe(2);
  });

  it('shares one lookup between concurrent misses and does not cache failures', async () => {
    let loads = 0;
    const cache = createLoadingCache<number>({ ttlMs: 1000, max: 10 });
    const slow = () => new Promise<number>((r) => setTimeout(() => r(++loads), 5));
    expect(await Promise.all([cache.get('k', slow), cache.get('k', slow)])).toEqual([1, 1]);
    await expect(cache.get('x', () => Promise.reject(new Error('down')))).rejects.toThrow('down');
    expect(await cache.get('x', () => Promise.resolve(7))).toBe(7);
  });

  it('holds at most max entries, dropping the least recently used', async () => {
    const cache = createLoadingCache<number>({ ttlMs: 1000, max: 2 });
    for (const k of ['a', 'b', 'c']) await cache.get(k, () => Promise.resolve(1));
    expect(['a', 'b', 'c'].map((k) => cache.peek(k))).toEqual([undefined, 1, 1]);
  });

  it('caches nothing with ttlMs 0', async () => {
    let loads = 0;
    const cache = createLoadingCache<number>({ ttlMs: 0, max: 2 });
    for (let i = 0; i < 3; i++) await cache.get('k', () => Promise.resolve(++loads));
    expect(loads).toBe(3);
  });
});
