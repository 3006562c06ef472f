/**
 * Bearer-token check of the read API: `Authorization: Bearer vt_…` resolved through the tenancy
 * store, answers (positive and negative) cached for VIGIL_CREDENTIAL_CACHE_MS so revocation takes
 * effect within that time. The cache is keyed by the token's hash, never the token.
 */
import { AppError } from '../errors/app-error.ts';
import { createTtlCache } from '../ingest/ttl-cache.ts';
import { sha256Hex } from '../tenancy/secrets.ts';
import type { TenancyStore } from '../tenancy/tenancy-store.ts';
import type { TokenRecord } from '../tenancy/types.ts';

export interface BearerAuth {
  /** The token's record; throws UNAUTHORIZED for a missing, unknown, expired or revoked token. */
  authenticate(authorization: string | undefined, nowMs: number): Promise<TokenRecord>;
}

const unauthorized = (message: string) => new AppError('UNAUTHORIZED', message);

export function createBearerAuth(deps: { tenancy: TenancyStore; cacheMs: number }): BearerAuth {
  const cache = createTtlCache<TokenRecord | null>({ ttlMs: deps.cacheMs, maxEntries: 10_000 });
  return {
    async authenticate(authorization, nowMs) {
      const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
      const token = match?.[1];
      if (token === undefined) throw unauthorized('Send Authorization: Bearer <token>.');
      const record = await cache.get(sha256Hex(token), () => deps.tenancy.resolveToken(token, nowMs));
      // A cached record may have expired since it was cached.
      if (!record || (record.expiresMs !== 0 && nowMs >= record.expiresMs)) {
        throw unauthorized('The token is invalid, expired or revoked.');
      }
      return record;
    },
  };
}
