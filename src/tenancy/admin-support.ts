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
  /**
   * The connection `atomically` watches keys and runs its transactions on, one at a time: in a
   * process that serves concurrent requests it must be a connection of its own, as any MULTI/EXEC
   * of another request on a shared one would end the watch. `redis` by default (the `vigil`
   * command, which does one thing at a time).
   */
  transactions?: Redis;
  /**
   * The connection of writes of many records at once (an import): one without a timer per command,
   * which the pipelines of a 100,000-device import would pay for each of their commands; `redis`
   * by default.
   */
  bulk?: Redis;
}

export interface AdminContext {
  redis: Redis;
  /** AdminDeps.bulk, or `redis`. */
  bulk: Redis;
  keys: TenancyKeys;
  dependents: DependentData;
  clock: () => number;
  nowUTC: () => string;
  /** Throws ENVIRONMENT_NOT_FOUND unless the environment exists. */
  requireEnv: (env: string) => Promise<void>;
  /** Raises the catalog epoch of `scope` (an environment, or `public`): workers see its changes from their next step. */
  catalogChanged: (scope: string) => Promise<void>;
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

/**
 * The last transaction queued on each connection: the next one waits for it, as WATCH state belongs
 * to the connection, whichever admin context started it.
 */
const transactionsUnderWay = new WeakMap<Redis, Promise<unknown>>();

export function createAdminContext(deps: AdminDeps): AdminContext {
  const { redis, keys, dependents } = deps;
  const clock = deps.clock ?? Date.now;
  const tx = deps.transactions ?? redis;
  return {
    redis,
    bulk: deps.bulk ?? redis,
    keys,
    dependents,
    clock,
    nowUTC: () => new Date(clock()).toISOString(),
    async catalogChanged(scope) {
      await redis.hincrby(keys.catalogEpochs(), scope, 1);
    },
    async requireEnv(env) {
      if (!(await redis.sismember(keys.envs(), env))) {
        throw new AppError('ENVIRONMENT_NOT_FOUND', `unknown environment ${JSON.stringify(env)}`);
      }
    },
    atomically(watchKeys, check, write) {
      const run = (transactionsUnderWay.get(tx) ?? Promise.resolve()).then(async () => {
        for (let attempt = 0; attempt < 5; attempt++) {
          await tx.watch(...watchKeys);
          try {
            await check();
          } catch (err) {
            await tx.unwatch();
            throw err;
          }
          const multi = tx.multi();
          write(multi);
          const result = await multi.exec();
          if (result) {
            const failed = result.find(([err]) => err);
            if (failed?.[0]) throw failed[0];
            return;
          }
        }
        throw new AppError('INTERNAL', 'the data changed concurrently five times; try again');
      });
      transactionsUnderWay.set(
        tx,
        run.catch(() => undefined),
      );
      return run;
    },
  };
}
