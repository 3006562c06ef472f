/**
 * Bearer-token check of the read API: `Authorization: Bearer vt_…` resolved through the tenancy
 * store, answers (positive and negative) cached for VIGIL_CREDENTIAL_CACHE_MS so revocation takes
 * effect within that time. The cache is keyed by the token's hash, never the token.
 *
 * A service (CLI) token's use is noted on its record (`lastUsedMs`, what `/tokens/list` shows), at
 * most once per USE_WRITE_INTERVAL_MS per token and process: the last write is remembered here, and
 * a write is never awaited — its failure is logged, and the request goes on as if it had succeeded.
 */
import type { IncomingMessage } from 'node:http';
import { LRUCache } from 'lru-cache';
import { AppError } from '../errors/app-error.ts';
import { bearerToken } from '../http/bearer-token.ts';
import { createLoadingCache } from '../lib/loading-cache.ts';
import type { Logger } from '../log/logger.ts';
import { hasExpired } from '../tenancy/records.ts';
import { sha256Hex } from '../tenancy/secrets.ts';
import type { TenancyStore } from '../tenancy/tenancy-store.ts';
import type { TokenRecord } from '../tenancy/types.ts';

export interface BearerAuth {
  /**
   * The record of the request's token; throws UNAUTHORIZED for a missing, unknown, expired or
   * revoked token, and BAD_REQUEST when Authorization is given more than once (Node would keep
   * the first silently, and a proxy may have read another). A token in the cache is answered at
   * once, without a promise; the first request of a token waits for the tenancy store.
   */
  authenticate(req: IncomingMessage, nowMs: number): TokenRecord | Promise<TokenRecord>;
}

/** How often a token's last use is written, at most, per process. */
export const USE_WRITE_INTERVAL_MS = 60_000;
/** Tokens whose last write is remembered (least recently used out: it is then written again). */
const MAX_REMEMBERED_USES = 10_000;

export function createBearerAuth(deps: {
  tenancy: Pick<TenancyStore, 'resolveToken' | 'recordTokenUse'>;
  cacheMs: number;
  log: Pick<Logger, 'warn'>;
}): BearerAuth {
  const cache = createLoadingCache<TokenRecord | null>({ ttlMs: deps.cacheMs, max: 10_000 });
  const lastWrites = new LRUCache<string, number>({ max: MAX_REMEMBERED_USES });

  /** Notes the use of a service token, unless this process wrote one for it within the interval. */
  function noteUse(record: TokenRecord, hash: string, nowMs: number): void {
    if (record.kind !== 'cli') return;
    const last = lastWrites.get(hash);
    if (last !== undefined && nowMs - last < USE_WRITE_INTERVAL_MS) return;
    lastWrites.set(hash, nowMs);
    deps.tenancy.recordTokenUse(hash, nowMs).catch((err: unknown) => {
      deps.log.warn(
        { err, env: record.env, tokenId: record.id },
        'the token’s last use could not be written',
      );
    });
  }

  const used = (record: TokenRecord | null, hash: string, nowMs: number): TokenRecord => {
    const found = valid(record, nowMs);
    noteUse(found, hash, nowMs);
    return found;
  };

  return {
    authenticate(req, nowMs) {
      const token = bearerToken(req);
      const key = sha256Hex(token);
      const cached = cache.peek(key);
      if (cached !== undefined) return used(cached, key, nowMs);
      return cache
        .get(key, () => deps.tenancy.resolveToken(token, nowMs))
        .then((record) => used(record, key, nowMs));
    },
  };
}

/** A cached record may have expired since it was cached. */
function valid(record: TokenRecord | null, nowMs: number): TokenRecord {
  if (!record || hasExpired(record.expiresMs, nowMs)) {
    throw new AppError('UNAUTHORIZED', 'The token is invalid, expired or revoked.');
  }
  return record;
}
