/**
 * A bounded read-through cache with a time to live, on lru-cache: answers live `ttlMs` (negative
 * ones — null — too, so an unknown key costs one lookup per `ttlMs`, not one per request), at most
 * `max` are kept (least recently used out first), and concurrent misses of one key share one load.
 * `ttlMs` 0 turns caching off.
 */
import { LRUCache } from 'lru-cache';

export interface LoadingCache<V> {
  /** The cached value, or the result of `load` (cached unless it throws). */
  get(key: string, load: () => Promise<V>): Promise<V>;
  /** The cached value if fresh, else undefined (no load). */
  peek(key: string): V | undefined;
  /** Stores a value loaded elsewhere (e.g. in a batch). */
  set(key: string, value: V): void;
  clear(): void;
}

/** lru-cache holds no null or undefined: every value travels in a box. */
interface Box<V> {
  value: V;
}

export function createLoadingCache<V>(opts: {
  ttlMs: number;
  max: number;
  /** Epoch ms, for tests; performance.now-based by default. */
  now?: () => number;
}): LoadingCache<V> {
  if (opts.ttlMs <= 0) {
    return { get: (_key, load) => load(), peek: () => undefined, set: () => undefined, clear: () => undefined };
  }
  const cache = new LRUCache<string, Box<V>, () => Promise<V>>({
    // A bound by size rather than `max`: with `max`, lru-cache allocates its arrays for every entry
    // up front (tens of bytes each), which a cache sized for a large fleet cannot afford empty.
    maxSize: opts.max,
    sizeCalculation: () => 1,
    ttl: opts.ttlMs,
    // Expired entries are dropped when read, not by a timer per entry.
    ttlAutopurge: false,
    ttlResolution: 0,
    ...(opts.now ? { perf: { now: opts.now } } : {}),
    fetchMethod: async (_key, _stale, { context }) => ({ value: await context() }),
  });
  return {
    async get(key, load) {
      const hit = cache.get(key);
      if (hit) return hit.value;
      const box = await cache.fetch(key, { context: load });
      // fetch resolves undefined only when the fetch was aborted (the entry deleted meanwhile).
      return box ? box.value : load();
    },
    peek: (key) => cache.get(key)?.value,
    set: (key, value) => {
      cache.set(key, { value });
    },
    clear: () => cache.clear(),
  };
}
