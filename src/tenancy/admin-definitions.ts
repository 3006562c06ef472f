/**
 * Administration of device definitions (public or private to an environment) and of the
 * environment pre-parser. Inputs arrive validated (see ./definition-files.ts). A write happens only
 * when something changed, and then bumps `revision`, which is what sandbox contexts are cached by:
 * workers pick up a new parser without a restart.
 */
import { AppError } from '../errors/app-error.ts';
import type { DefinitionSpec } from '../domain/types.ts';
import type { DefinitionScope } from './tenancy-keys.ts';
import { checkName, type AdminContext } from './admin-support.ts';
import { decodePreparser, encodeDefinition, pipelineValues } from './records.ts';
import type { PreparserRecord } from './types.ts';

export const describeScope = (scope: DefinitionScope) =>
  scope.kind === 'public' ? 'public' : `private to ${scope.env}`;

export function createDefinitionAdmin(ctx: AdminContext) {
  const { redis, keys } = ctx;

  /** Names of the devices (as `env/device`) that use a definition. */
  async function devicesUsing(scope: DefinitionScope, name: string): Promise<string[]> {
    const envs = scope.kind === 'public' ? await redis.smembers(keys.envs()) : [scope.env];
    const users: string[] = [];
    for (const env of envs) {
      const devices = await redis.zrange(keys.devices(env), 0, -1);
      if (devices.length === 0) continue;
      const pipe = redis.pipeline();
      for (const d of devices) pipe.hmget(keys.device(env, d), 'definitionName', 'definitionIsPublic');
      const rows = pipelineValues<[string | null, string | null]>(await pipe.exec());
      rows.forEach(([defName, isPublic], i) => {
        if (defName === name && (isPublic === '1') === (scope.kind === 'public'))
          users.push(`${env}/${devices[i]}`);
      });
    }
    return users;
  }

  return {
    /** Stores a definition; unchanged content writes nothing. */
    async applyDefinition(scope: DefinitionScope, spec: DefinitionSpec, parserSource: string) {
      checkName('definition', spec.name);
      if (scope.kind === 'private') await ctx.requireEnv(scope.env);
      const key = keys.definition(scope, spec.name);
      const [storedSpec, storedParser, storedRevision] = await redis.hmget(key, 'spec', 'parser', 'revision');
      const previous = Number(storedRevision ?? 0);
      if (storedSpec === JSON.stringify(spec) && storedParser === parserSource) {
        return { name: spec.name, revision: previous, changed: false };
      }
      const revision = previous + 1;
      await ctx.atomically(
        [key],
        async () => {
          if (Number((await redis.hget(key, 'revision')) ?? 0) !== previous) {
            throw new AppError('ALREADY_EXISTS', `definition ${spec.name} changed meanwhile; apply again`);
          }
        },
        (m) =>
          m
            .sadd(keys.definitions(scope), spec.name)
            .hset(key, encodeDefinition(spec, parserSource, revision, ctx.nowUTC())),
      );
      return { name: spec.name, revision, changed: true };
    },
    /** Deletes a definition; IN_USE while any device uses it. */
    async deleteDefinition(scope: DefinitionScope, name: string) {
      if (scope.kind === 'private') await ctx.requireEnv(scope.env);
      if (!(await redis.sismember(keys.definitions(scope), name))) {
        throw new AppError('DEFINITION_NOT_FOUND', `no definition ${name} (${describeScope(scope)})`);
      }
      const users = await devicesUsing(scope, name);
      if (users.length > 0) {
        const shown = users.slice(0, 5).join(', ') + (users.length > 5 ? ', …' : '');
        throw new AppError('IN_USE', `definition ${name} is used by ${users.length} device(s): ${shown}`);
      }
      await redis.multi().srem(keys.definitions(scope), name).del(keys.definition(scope, name)).exec();
    },
    devicesUsing,

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
          if (write?.changed) m.hset(key, 'enabled', enabled ? '1' : '0');
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
        await redis.multi().hgetall(key).hdel(key, 'source', 'enabled').exec(),
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
