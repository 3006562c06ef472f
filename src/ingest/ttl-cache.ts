/**
 * A small bounded cache with a time to live, for credentials and pre-parser state: answers
 * (positive and negative) live `ttlMs`, at most `maxEntries` are kept (the oldest insertion goes
 * first), and concurrent misses of one key share one lookup.
 */
export interface TtlCache<V> {
  /** The cached value, or the result of `load` (cached unless it throws). */
  get(key: string, load: () => Promise<V>): Promise<V>;
  /** The cached value if fresh, else undefined (no load). */
  peek(key: string): V | undefined;
  /** Stores a value loaded elsewhere (e.g. in a batch). */
  set(key: string, value: V): void;
  clear(): void;
  readonly size: number;
}

export function createTtlCache<V>(opts: {
  ttlMs: number;
  maxEntries: number;
  now?: () => number;
}): TtlCache<V> {
  const now = opts.now ?? Date.now;
  const entries = new Map<string, { value: V; expiresMs: number }>();
  const loading = new Map<string, Promise<V>>();

  const store = (key: string, value: V) => {
    if (opts.ttlMs <= 0) return;
    entries.delete(key);
    while (entries.size >= opts.maxEntries) {
      const oldest = entries.keys().next();
      if (oldest.done === true) break;
      entries.delete(oldest.value);
    }
    entries.set(key, { value, expiresMs: now() + opts.ttlMs });
  };

  return {
    get(key, load) {
      const hit = entries.get(key);
      if (hit && hit.expiresMs > now()) return Promise.resolve(hit.value);
      if (hit) entries.delete(key);
      const pending = loading.get(key);
      if (pending) return pending;
      const p = load().then(
        (value) => {
          loading.delete(key);
          store(key, value);
          return value;
        },
        (err: unknown) => {
          loading.delete(key);
          throw err;
        },
      );
      loading.set(key, p);
      return p;
    },
    peek(key) {
      const hit = entries.get(key);
      return hit && hit.expiresMs > now() ? hit.value : undefined;
    },
    set: store,
    clear() {
      entries.clear();
    },
    get size() {
      return entries.size;
    },
  };
}
