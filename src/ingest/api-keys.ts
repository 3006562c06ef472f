/**
 * API-key resolution for both ingestion entries: SHA-256 hex of the key addresses
 * `Keys.apiKey(hash)` (written by the tenancy CLI). Answers, positive and negative, are cached for
 * `cacheMs`, so a revoked key stops working within that time.
 */
import { hash } from 'node:crypto';
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import type { Keys } from '../state/keys.ts';
import { createTtlCache } from './ttl-cache.ts';

/** What a valid key tells the gateway. `hash` identifies the key without revealing it. */
export interface ApiKeyInfo {
  env: string;
  id: string;
  name: string;
  hash: string;
}

export interface ApiKeyResolver {
  /** The key's record, or null when unknown or revoked. Throws AppError UNAVAILABLE when Redis is down. */
  resolve(apiKey: string): Promise<ApiKeyInfo | null>;
}

const KEY_SHAPE = /^vk_[A-Za-z0-9_-]{1,125}$/;
/** Keys whose hash is remembered (a remembered key is only its hash's lookup, cached or not). */
const MAX_REMEMBERED_HASHES = 10_000;

/** True when `key` could be an API key (`vk_` + base64url, at most 128 characters): others need no lookup. */
export const isPlausibleApiKey = (key: string): boolean => KEY_SHAPE.test(key);

export const hashApiKey = (key: string): string => hash('sha256', key, 'hex');

export function createApiKeyResolver(deps: {
  redis: Redis;
  keys: Keys;
  cacheMs: number;
  maxEntries?: number;
}): ApiKeyResolver {
  const cache = createTtlCache<ApiKeyInfo | null>({
    ttlMs: deps.cacheMs,
    maxEntries: deps.maxEntries ?? 50_000,
  });
  const load = async (hash: string): Promise<ApiKeyInfo | null> => {
    let fields: (string | null)[];
    try {
      fields = await deps.redis.hmget(deps.keys.apiKey(hash), 'env', 'id', 'name');
    } catch (err) {
      throw new AppError('UNAVAILABLE', 'The key store cannot be reached; try again later.', { cause: err });
    }
    const [env, id, name] = fields;
    return env ? { env, id: id ?? '', name: name ?? '', hash } : null;
  };
  // The hash of each recently used key: every MQTT publish and HTTP submission names its key, and
  // checking its shape and hashing it cost a micro-second or two per payload. Bounded (oldest out).
  const hashes = new Map<string, string>();
  const hashOf = (apiKey: string): string | null => {
    let hash = hashes.get(apiKey);
    if (hash === undefined) {
      if (!isPlausibleApiKey(apiKey)) return null;
      hash = hashApiKey(apiKey);
      if (hashes.size >= MAX_REMEMBERED_HASHES) hashes.delete(hashes.keys().next().value ?? '');
      hashes.set(apiKey, hash);
    }
    return hash;
  };
  return {
    async resolve(apiKey) {
      const hash = hashOf(apiKey);
      if (hash === null) return null;
      return cache.get(hash, () => load(hash));
    },
  };
}
