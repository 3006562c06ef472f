/**
 * Administration of the environment pre-parser (definitions and their versions are
 * ./admin-definition-versions.ts). A write happens only when something changed, and a new source
 * bumps `revision`, which is what sandbox contexts are cached by: workers pick up a new pre-parser
 * without a restart.
 */
import { AppError } from '../errors/app-error.ts';
import type { AdminContext } from './admin-support.ts';
import { decodePreparser, pipelineValues } from './records.ts';
import type { PreparserRecord } from './types.ts';

export function createDefinitionAdmin(ctx: AdminContext) {
  const { redis, keys } = ctx;

  return {
    /** The environment's pre-parser; null when it has none. */
    async findPreparser(env: string): Promise<PreparserRecord | null> {
      await ctx.requireEnv(env);
      return decodePreparser(await redis.hgetall(keys.preparser(env)));
    },
    /**
     * Sets the pre-parser source; `enabled` undefined keeps the current flag (new: disabled).
     * `revision`: the one the change is based on (0: that there is no pre-parser), CONFLICT when
     * it has another; absent, the last writer wins. A new source counts the revision up (which is
     * what workers' sandboxes cache the compiled code by), the flag alone does not.
     */
    async setPreparser(
      env: string,
      source: string,
      enabled?: boolean,
      revision?: number,
    ): Promise<PreparserWrite> {
      await ctx.requireEnv(env);
      const key = keys.preparser(env);
      let write: Omit<PreparserWrite, 'revision' | 'enabled'> | undefined;
      await ctx.atomically(
        [key],
        async () => {
          const stored = await redis.hgetall(key);
          const before = decodePreparser(stored);
          if (revision !== undefined && revision !== (before?.revision ?? 0))
            throw preparserConflict(env, revision, before?.revision ?? 0);
          const nextEnabled = enabled ?? before?.enabled ?? false;
          if (before && before.source === source && before.enabled === nextEnabled) {
            write = { before, after: before, changed: false };
            return;
          }
          // Counted on from a removed pre-parser's revision too (see removePreparser).
          const next = before?.source === source ? before.revision : Number(stored.revision ?? 0) + 1;
          write = { before, after: { source, enabled: nextEnabled, revision: next }, changed: true };
        },
        (m) => {
          if (!write?.changed) return;
          const { source: s, enabled: e, revision: r } = write.after;
          m.hset(key, { source: s, enabled: e ? '1' : '0', revision: String(r) });
          m.hincrby(keys.catalogEpochs(), env, 1);
        },
      );
      if (!write) throw new Error('the pre-parser was not read');
      return { ...write, revision: write.after.revision, enabled: write.after.enabled };
    },
    /** Enables or disables the pre-parser; PREPARSER_NOT_FOUND when the environment has none. */
    async setPreparserEnabled(env: string, enabled: boolean): Promise<PreparserWrite> {
      await ctx.requireEnv(env);
      const key = keys.preparser(env);
      let write: Omit<PreparserWrite, 'revision' | 'enabled'> | undefined;
      await ctx.atomically(
        [key],
        async () => {
          const before = decodePreparser(await redis.hgetall(key));
          if (!before) throw noPreparser(env);
          write = { before, after: { ...before, enabled }, changed: before.enabled !== enabled };
        },
        (m) => {
          if (!write?.changed) return;
          m.hset(key, 'enabled', enabled ? '1' : '0');
          m.hincrby(keys.catalogEpochs(), env, 1);
        },
      );
      if (!write) throw new Error('the pre-parser was not read');
      return { ...write, revision: write.after.revision, enabled };
    },
    /**
     * Removes the pre-parser and answers it; PREPARSER_NOT_FOUND when there is none. Its revision
     * stays behind (a hash with `revision` alone, which reads as no pre-parser), so the next source
     * set gets a revision no worker has compiled code cached under.
     */
    async removePreparser(env: string): Promise<PreparserRecord> {
      await ctx.requireEnv(env);
      const key = keys.preparser(env);
      const [stored] = pipelineValues<Record<string, string>>(
        await redis
          .multi()
          .hgetall(key)
          .hdel(key, 'source', 'enabled')
          .hincrby(keys.catalogEpochs(), env, 1)
          .exec(),
      );
      const removed = decodePreparser(stored);
      if (!removed) throw noPreparser(env);
      return removed;
    },
  };
}

/** What setting or switching the pre-parser did (`revision` and `enabled` are `after`'s). */
export interface PreparserWrite {
  before: PreparserRecord | null;
  after: PreparserRecord;
  changed: boolean;
  revision: number;
  enabled: boolean;
}

const noPreparser = (env: string) =>
  new AppError(
    'PREPARSER_NOT_FOUND',
    `environment ${env} has no pre-parser; set one with 'vigil preparser set'`,
  );

function preparserConflict(env: string, expected: number, current: number): AppError {
  const now = current === 0 ? 'has no pre-parser' : `pre-parser is at revision ${current}`;
  return new AppError(
    'CONFLICT',
    `environment ${env} ${now}, not ${expected}: it changed since it was read; read it again and repeat the change`,
    { details: { revision: current } },
  );
}

export type DefinitionAdmin = ReturnType<typeof createDefinitionAdmin>;
