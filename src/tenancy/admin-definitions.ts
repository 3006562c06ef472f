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

    /** Sets the pre-parser source; `enabled` undefined keeps the current flag (new: disabled). */
    async setPreparser(
      env: string,
      source: string,
      enabled?: boolean,
    ): Promise<{ revision: number; enabled: boolean; changed: boolean }> {
      await ctx.requireEnv(env);
      const current = decodePreparser(await redis.hgetall(keys.preparser(env)));
      const nextEnabled = enabled ?? current?.enabled ?? false;
      if (current && current.source === source && current.enabled === nextEnabled) {
        return { revision: current.revision, enabled: nextEnabled, changed: false };
      }
      const revision = current && current.source === source ? current.revision : (current?.revision ?? 0) + 1;
      await redis.hset(keys.preparser(env), {
        source,
        enabled: nextEnabled ? '1' : '0',
        revision: String(revision),
      });
      return { revision, enabled: nextEnabled, changed: true };
    },
    async setPreparserEnabled(env: string, enabled: boolean) {
      await ctx.requireEnv(env);
      if (!(await redis.exists(keys.preparser(env)))) {
        throw new AppError(
          'INVALID_INPUT',
          `environment ${env} has no pre-parser; set one with 'vigil preparser set'`,
        );
      }
      await redis.hset(keys.preparser(env), 'enabled', enabled ? '1' : '0');
    },
    async removePreparser(env: string) {
      await ctx.requireEnv(env);
      await redis.del(keys.preparser(env));
    },
  };
}

export type DefinitionAdmin = ReturnType<typeof createDefinitionAdmin>;
