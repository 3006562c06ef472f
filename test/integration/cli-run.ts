/**
 * Runs the real `vigil` command as a subprocess (as `npx vigil` does: Node 24 with
 * --no-node-snapshot) against the test Redis, under a unique key prefix.
 */
import { execFile } from 'node:child_process';
import { Redis } from 'ioredis';
import { inject } from 'vitest';
import { testId } from '../support/context.ts';

/** The timeout of a test of the `vigil` command: its processes start one after another. */
export const CLI_TEST_TIMEOUT_MS = 180_000;

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliHarness {
  prefix: string;
  redis: Redis;
  run(args: string[], env?: Record<string, string>, input?: string): Promise<CliResult>;
  /** Runs with --json and parses stdout; fails the test unless it exits 0. */
  json<T = unknown>(args: string[]): Promise<T>;
  /** Every key under the prefix with its content, for "nothing changed" comparisons. */
  snapshot(): Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

/** `defaultEnv`: variables every run gets (a run's own `env` wins). */
export function createCliHarness(defaultEnv: Record<string, string> = {}): CliHarness {
  const prefix = testId();
  const redisUrl = inject('redisUrl');
  const redis = new Redis(redisUrl);
  // No VIGIL_ variable of the shell, and no settings file (config/vigil.env) of the checkout.
  const baseEnv = {
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('VIGIL_'))),
    VIGIL_CONFIG_FILE: '',
  };

  const run = (args: string[], env: Record<string, string> = {}, input?: string) =>
    new Promise<CliResult>((resolve) => {
      const child = execFile(
        'node_modules/.bin/node',
        ['--no-node-snapshot', 'src/cli/main.ts', ...args],
        {
          env: { ...baseEnv, VIGIL_REDIS_URL: redisUrl, VIGIL_KEY_PREFIX: prefix, ...defaultEnv, ...env },
          timeout: 30_000,
        },
        (err, stdout, stderr) => {
          const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
          resolve({ code, stdout, stderr });
        },
      );
      child.stdin?.end(input ?? '');
    });

  return {
    prefix,
    redis,
    run,
    async json<T>(args: string[]) {
      const r = await run([...args, '--json']);
      if (r.code !== 0) throw new Error(`vigil ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
      return JSON.parse(r.stdout) as T;
    },
    async snapshot() {
      const keys = (await redis.keys(`${prefix}:*`)).sort();
      const out: Record<string, unknown> = {};
      for (const key of keys) {
        const type = await redis.type(key);
        if (type === 'hash') out[key] = await redis.hgetall(key);
        else if (type === 'set') out[key] = (await redis.smembers(key)).sort();
        else if (type === 'zset') out[key] = await redis.zrange(key, 0, -1, 'WITHSCORES');
        else if (type === 'list') out[key] = await redis.lrange(key, 0, -1);
        else if (type === 'stream') out[key] = await redis.xrange(key, '-', '+');
        else out[key] = await redis.get(key);
      }
      return out;
    },
    async close() {
      const keys = await redis.keys(`${prefix}:*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    },
  };
}
