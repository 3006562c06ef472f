/**
 * API-key resolution for both ingestion entries: SHA-256 hex of the key addresses
 * `TenancyKeys.apiKey(hash)` (written by the tenancy CLI). Answers, positive and negative, are cached for
 * `cacheMs`, so a revoked key stops working within that time. A key replaced by a rotation carries
 * its expiry (`expiresMs`), checked on every use, cached or not: once past it, the key is refused
 * like a revoked one (Redis drops its record then too).
 */
import { LRUCache } from 'lru-cache';
import { AppError } from '../errors/app-error.ts';
import { sha256Hex } from '../lib/sha256.ts';
import type { Redis } from '../redis/connect.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import { createLoadingCache } from '../lib/loading-cache.ts';
import { hasExpired } from '../tenancy/records.ts';

/** What a valid key tells the gateway. `hash` identifies the key without revealing it. */
export interface ApiKeyInfo {
  env: string;
  id: string;
  name: string;
  hash: string;
  /** Epoch ms after which the key is refused; 0 = no expiry. */
  expiresMs: number;
}

export interface ApiKeyResolver {
  /**
   * The key's record, or null when unknown, revoked or past its expiry. Throws AppError UNAVAILABLE
   * when Redis is down.
   */
  resolve(apiKey: string): Promise<ApiKeyInfo | null>;
}

const KEY_SHAPE = /^vk_[A-Za-z0-9_-]{1,125}$/;
/** TenancyKeys whose hash is remembered (a remembered key is only its hash's lookup, cached or not). */
const MAX_REMEMBERED_HASHES = 10_000;

/** True when `key` could be an API key (`vk_` + base64url, at most 128 characters): others need no lookup. */
export const isPlausibleApiKey = (key: string): boolean => KEY_SHAPE.test(key);

export function createApiKeyResolver(deps: {
  redis: Redis;
  keys: TenancyKeys;
  cacheMs: number;
  maxEntries?: number;
  /** Epoch ms of the expiry checks; Date.now by default. */
  clock?: () => number;
}): ApiKeyResolver {
  const clock = deps.clock ?? Date.now;
  const cache = createLoadingCache<ApiKeyInfo | null>({
    ttlMs: deps.cacheMs,
    max: deps.maxEntries ?? 50_000,
  });
  const load = async (hash: string): Promise<ApiKeyInfo | null> => {
    let fields: (string | null)[];
    try {
      fields = await deps.redis.hmget(deps.keys.apiKey(hash), 'env', 'id', 'name', 'expiresMs');
    } catch (err) {
      throw new AppError('UNAVAILABLE', 'The key store cannot be reached; try again later.', { cause: err });
    }
    const [env, id, name, expiresMs] = fields;
    return env ? { env, id: id ?? '', name: name ?? '', hash, expiresMs: Number(expiresMs ?? 0) || 0 } : null;
  };
  // The hash of each recently used key: every MQTT publish and HTTP submission names its key, and
  // checking its shape and hashing it cost a micro-second or two per payload. Bounded (least recently used out).
  const hashes = new LRUCache<string, string>({ max: MAX_REMEMBERED_HASHES });
  const hashOf = (apiKey: string): string | null => {
    let hash = hashes.get(apiKey);
    if (hash === undefined) {
      if (!isPlausibleApiKey(apiKey)) return null;
      hash = sha256Hex(apiKey);
      hashes.set(apiKey, hash);
    }
    return hash;
  };
  return {
    async resolve(apiKey) {
      const hash = hashOf(apiKey);
      if (hash === null) return null;
      const info = await cache.get(hash, () => load(hash));
      return info && !hasExpired(info.expiresMs, clock()) ? info : null;
    },
  };
}
