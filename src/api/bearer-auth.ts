/**
 * Bearer-token check of the read API: `Authorization: Bearer vt_…` resolved through the tenancy
 * store, answers (positive and negative) cached for VIGIL_CREDENTIAL_CACHE_MS so revocation takes
 * effect within that time. The cache is keyed by the token's hash, never the token.
 */
import type { IncomingMessage } from 'node:http';
import { AppError } from '../errors/app-error.ts';
import { bearerToken } from '../http/bearer-token.ts';
import { createLoadingCache } from '../lib/loading-cache.ts';
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

export function createBearerAuth(deps: { tenancy: TenancyStore; cacheMs: number }): BearerAuth {
  const cache = createLoadingCache<TokenRecord | null>({ ttlMs: deps.cacheMs, max: 10_000 });
  return {
    authenticate(req, nowMs) {
      const token = bearerToken(req);
      const key = sha256Hex(token);
      const cached = cache.peek(key);
      if (cached !== undefined) return valid(cached, nowMs);
      return cache
        .get(key, () => deps.tenancy.resolveToken(token, nowMs))
        .then((record) => valid(record, nowMs));
    },
  };
}

/** A cached record may have expired since it was cached. */
function valid(record: TokenRecord | null, nowMs: number): TokenRecord {
  if (!record || (record.expiresMs !== 0 && nowMs >= record.expiresMs)) {
    throw new AppError('UNAUTHORIZED', 'The token is invalid, expired or revoked.');
  }
  return record;
}
