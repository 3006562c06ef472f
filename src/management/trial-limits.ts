/**
 * How many parser runs the parser workbench and the API's `/definitions/run` and
 * `/definitions/replay` take per minute, from one caller (a console session, an API token) and from
 * all callers of an environment together: each run costs up to the sandbox's time limit of a thread
 * of the API process, so a signed-in user or a token must not be able to keep it busy. The counts
 * live in Redis (every API process shares them), each for the minute that began with its first run:
 *
 * - `<prefix>:env:<env>:workbench-runs`: the environment's runs;
 * - `<prefix>:env:<env>:workbench-runs:<caller>`: one caller's (a session's key hash, or `api:` and
 *   the token's actor).
 *
 * A request takes all its runs or none: a run counts one, a replay one per payload it runs. One that
 * would go over either limit runs nothing and gets RATE_LIMITED with the seconds until that minute
 * ends.
 */
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';

export interface WorkbenchLimits {
  /** Counts `runs` runs of `caller` in `env`, or throws RATE_LIMITED (with Retry-After) and counts none. */
  take(env: string, caller: string, runs: number): Promise<void>;
}

export interface WorkbenchLimitOptions {
  redis: Redis;
  /** The deployment's Redis key prefix. */
  prefix: string;
  perSessionPerMinute: number;
  perEnvPerMinute: number;
}

const WINDOW_MS = 60_000;

// KEYS: caller counter, environment counter. ARGV: runs, caller limit, environment limit, window ms.
// Answers {0, 0} when counted, else {which limit (1 caller, 2 environment), its counter's ms left}.
const TAKE = `
local runs = tonumber(ARGV[1])
for i = 1, 2 do
  local used = tonumber(redis.call('GET', KEYS[i]) or '0')
  if used + runs > tonumber(ARGV[i + 1]) then return {i, redis.call('PTTL', KEYS[i])} end
end
for i = 1, 2 do
  redis.call('INCRBY', KEYS[i], runs)
  if redis.call('PTTL', KEYS[i]) < 0 then redis.call('PEXPIRE', KEYS[i], ARGV[4]) end
end
return {0, 0}
`;

export function createWorkbenchLimits(options: WorkbenchLimitOptions): WorkbenchLimits {
  const { redis, prefix, perSessionPerMinute, perEnvPerMinute } = options;
  return {
    async take(env, caller, runs) {
      if (runs <= 0) return;
      const envKey = `${prefix}:env:${env}:workbench-runs`;
      const [limited, msLeft] = (await redis.eval(
        TAKE,
        2,
        `${envKey}:${caller}`,
        envKey,
        runs,
        perSessionPerMinute,
        perEnvPerMinute,
        WINDOW_MS,
      )) as [number, number];
      if (limited === 0) return;
      const limit = limited === 1 ? perSessionPerMinute : perEnvPerMinute;
      const whose = limited === 1 ? 'one session or token' : 'this environment';
      const retryAfterSeconds = Math.max(1, Math.ceil((msLeft > 0 ? msLeft : WINDOW_MS) / 1000));
      const message =
        runs > limit
          ? `This needs ${runs} parser runs, more than the ${limit} ${whose} may make in a minute.`
          : `Parser trials take ${limit} runs a minute from ${whose}; try again in ${retryAfterSeconds} s.`;
      throw new AppError('RATE_LIMITED', message, { retryAfterSeconds });
    },
  };
}
