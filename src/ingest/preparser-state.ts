/**
 * What the gateway needs to know of an environment's pre-parser: is one set, and is it enabled
 * (`TenancyKeys.preparser(env)` hash {source, enabled, revision}). Cached like API keys.
 */
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { PreparserState } from './body.ts';
import { createLoadingCache } from '../lib/loading-cache.ts';

export interface PreparserStates {
  /** Throws AppError UNAVAILABLE when Redis is down. */
  get(env: string): Promise<PreparserState>;
}

export function createPreparserStates(deps: { redis: Redis; keys: TenancyKeys; cacheMs: number }): PreparserStates {
  const cache = createLoadingCache<PreparserState>({ ttlMs: deps.cacheMs, max: 10_000 });
  const load = async (env: string): Promise<PreparserState> => {
    let enabled: string | null;
    try {
      enabled = await deps.redis.hget(deps.keys.preparser(env), 'enabled');
    } catch (err) {
      throw new AppError('UNAVAILABLE', 'The configuration store cannot be reached; try again later.', {
        cause: err,
      });
    }
    if (enabled === null) return 'none';
    return enabled === '1' ? 'enabled' : 'disabled';
  };
  return { get: (env) => cache.get(env, () => load(env)) };
}
