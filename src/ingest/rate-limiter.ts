/**
 * Per-API-key token buckets, in this process's memory: each key may submit `perSecond` payloads
 * per second on average with bursts of up to one second's worth. With several gateway processes
 * the limit applies per process (documented in docs/ingestion.md).
 */
export interface RateLimiter {
  /** Takes one token for `key`: 0 when allowed, else the seconds until a token is available. */
  take(key: string): number;
}

export function createRateLimiter(opts: {
  perSecond: number;
  /** Buckets kept; the least recently inserted is dropped first (it is then full again). */
  maxKeys?: number;
  now?: () => number;
}): RateLimiter {
  const { perSecond } = opts;
  if (perSecond <= 0) return { take: () => 0 };
  const now = opts.now ?? Date.now;
  const maxKeys = opts.maxKeys ?? 100_000;
  const buckets = new Map<string, { tokens: number; atMs: number }>();
  return {
    take(key) {
      const t = now();
      let bucket = buckets.get(key);
      if (bucket) {
        bucket.tokens = Math.min(perSecond, bucket.tokens + ((t - bucket.atMs) / 1000) * perSecond);
        bucket.atMs = t;
      } else {
        if (buckets.size >= maxKeys) {
          const oldest = buckets.keys().next();
          if (oldest.done !== true) buckets.delete(oldest.value);
        }
        bucket = { tokens: perSecond, atMs: t };
        buckets.set(key, bucket);
      }
      if (bucket.tokens >= 1) {
        bucket.tokens -= 1;
        return 0;
      }
      return Math.max(1, Math.ceil((1 - bucket.tokens) / perSecond));
    },
  };
}
