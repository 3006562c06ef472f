/**
 * The isolates of a process's environments, bounded: one per environment, built on its first use;
 * one idle for `idleMs` is dropped, and beyond `maxIsolates` the least recently used is. A dropped
 * environment's isolate is built again on its next use and its parsers recompiled (their globals
 * start afresh); nothing fails for it. Each environment's account outlives its isolates.
 */
import { LRUCache } from 'lru-cache';
import { startPeriodic } from '../lib/periodic.ts';
import type { Logger } from '../log/logger.ts';
import { newEnvAccount, type EnvAccount } from './env-account.ts';
import { createEnvIsolate, type EnvIsolate } from './env-isolate.ts';
import type { CompileLimits } from './parser-context.ts';

export interface IsolatePoolOptions {
  limits: CompileLimits;
  /** Contexts kept compiled per isolate. */
  maxContexts: number;
  /** Isolates kept at most; the least recently used is disposed to make room. */
  maxIsolates: number;
  /** An isolate unused for this long is disposed, in ms. */
  idleMs: number;
  /** Monotonic time in ms, above 0 (lru-cache reads a start at 0 as no time limit): tests move it instead of waiting. */
  clock: () => number;
  log: Logger;
  onCatastrophicError: (message: string) => void;
}

export interface IsolatePool {
  /** The environment's isolate; built now if it has none (first use, dropped, or replaced). */
  isolateOf(env: string): EnvIsolate;
  /** Disposes the environment's isolate after a memory failure; its next use builds a new one. */
  replace(env: string): void;
  /** The environment's account, created on first use. */
  accountOf(env: string): EnvAccount;
  accounts(): ReadonlyMap<string, EnvAccount>;
  /** Live isolates, and the contexts compiled in them (one environment's when `env` is given). */
  sizes(env?: string): { isolates: number; contexts: number };
  /** Disposes every isolate; safe to call twice. */
  close(): void;
}

export function createIsolatePool(options: IsolatePoolOptions): IsolatePool {
  const accounts = new Map<string, EnvAccount>();
  const accountOf = (env: string): EnvAccount => {
    let account = accounts.get(env);
    if (account === undefined) accounts.set(env, (account = newEnvAccount()));
    return account;
  };
  const isolates = new LRUCache<string, EnvIsolate>({
    max: options.maxIsolates,
    ttl: options.idleMs,
    updateAgeOnGet: true,
    // No timer of lru-cache's own: staleness is read from the clock on every check.
    ttlResolution: 0,
    perf: { now: options.clock },
    dispose: (isolate, env, reason) => {
      isolate.dispose();
      if (reason === 'evict' || reason === 'expire') {
        accountOf(env).isolatesDropped += 1;
        options.log.debug({ env, reason }, 'parser isolate dropped');
      }
    },
  });
  // An idle isolate goes on the next look after its time, even when no parser runs at all.
  const lookEveryMs = Math.max(1, Math.min(options.idleMs, 60_000));
  let lastLookMs = options.clock();
  const looks = startPeriodic({
    intervalMs: lookEveryMs,
    unref: true,
    run: () => dropIdle(),
    onError: (err) => options.log.warn({ err }, 'dropping idle parser isolates failed'),
  });

  function dropIdle(): void {
    lastLookMs = options.clock();
    isolates.purgeStale();
  }

  return {
    isolateOf(env) {
      if (options.clock() - lastLookMs >= lookEveryMs) dropIdle();
      const live = isolates.get(env);
      if (live !== undefined && !live.isDisposed()) return live;
      const account = accountOf(env);
      const isolate = createEnvIsolate({
        env,
        limits: options.limits,
        maxContexts: options.maxContexts,
        account,
        onCatastrophicError: options.onCatastrophicError,
      });
      account.isolatesCreated += 1;
      isolates.set(env, isolate);
      return isolate;
    },
    replace(env) {
      isolates.delete(env);
      accountOf(env).isolateRestarts += 1;
      options.log.warn(
        { env, memoryLimitMb: options.limits.memoryLimitMb },
        "environment's parser isolate hit its memory limit; replacing it",
      );
    },
    accountOf,
    accounts: () => accounts,
    sizes(env) {
      if (env !== undefined) {
        const isolate = isolates.peek(env);
        return isolate === undefined
          ? { isolates: 0, contexts: 0 }
          : { isolates: 1, contexts: isolate.contexts() };
      }
      let contexts = 0;
      for (const isolate of isolates.values()) contexts += isolate.contexts();
      return { isolates: isolates.size, contexts };
    },
    close() {
      // The look is synchronous: none is in progress here, and closing stops the timer at once.
      void looks.close();
      isolates.clear();
    },
  };
}
