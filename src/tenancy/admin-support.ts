/** What the admin operations share: their dependencies, input checks and atomic writes. */
import type { ChainableCommander } from 'ioredis';
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import type { DependentData, TenancyKeys } from './tenancy-keys.ts';
import { nameProblem, type NameKind } from './names.ts';

export interface AdminDeps {
  redis: Redis;
  keys: TenancyKeys;
  /** What the rest of Vigil keeps for devices and environments, deleted with them. */
  dependents: DependentData;
  /** Epoch ms; Date.now by default. */
  clock?: () => number;
}

export interface AdminContext {
  redis: Redis;
  keys: TenancyKeys;
  dependents: DependentData;
  clock: () => number;
  nowUTC: () => string;
  /** Throws ENVIRONMENT_NOT_FOUND unless the environment exists. */
  requireEnv: (env: string) => Promise<void>;
  /**
   * Runs `check` with `watchKeys` watched, then `write` in MULTI/EXEC; retries a few times when a
   * watched key changed meanwhile, so a concurrent writer can never be overwritten half-way.
   */
  atomically(
    watchKeys: string[],
    check: () => Promise<void>,
    write: (m: ChainableCommander) => void,
  ): Promise<void>;
}

export const invalid = (message: string) => new AppError('INVALID_INPUT', message);

/** Throws INVALID_INPUT unless `value` is a valid name of `kind`. */
export function checkName(kind: NameKind, value: string): void {
  const problem = nameProblem(kind, value);
  if (problem) throw invalid(problem);
}

export function createAdminContext(deps: AdminDeps): AdminContext {
  const { redis, keys, dependents } = deps;
  const clock = deps.clock ?? Date.now;
  return {
    redis,
    keys,
    dependents,
    clock,
    nowUTC: () => new Date(clock()).toISOString(),
    async requireEnv(env) {
      if (!(await redis.sismember(keys.envs(), env))) {
        throw new AppError('ENVIRONMENT_NOT_FOUND', `unknown environment ${JSON.stringify(env)}`);
      }
    },
    async atomically(watchKeys, check, write) {
      for (let attempt = 0; attempt < 5; attempt++) {
        await redis.watch(...watchKeys);
        try {
          await check();
        } catch (err) {
          await redis.unwatch();
          throw err;
        }
        const multi = redis.multi();
        write(multi);
        const result = await multi.exec();
        if (result) {
          const failed = result.find(([err]) => err);
          if (failed?.[0]) throw failed[0];
          return;
        }
      }
      throw new AppError('INTERNAL', 'the data changed concurrently five times; try again');
    },
  };
}
