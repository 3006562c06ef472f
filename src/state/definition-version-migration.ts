/**
 * Layout 5: definitions have versions (src/tenancy/admin-definition-versions.ts). A definition stored before
 * them gets its content as its one version, numbered as its old revision counted (so no sandbox
 * caches another text under that number), published, made by `migration`. Per definition in one
 * transaction-free script that does nothing to a head that has a version already: a migration that
 * stopped half-way resumes.
 */
import type { DefinitionScope, TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { Migration } from './migrations.ts';

/**
 * KEYS[1] the head, KEYS[2] its versions' metas, KEYS[3] the version's content (numbered by the
 * head's revision, ARGV[2]); ARGV[1] the meta JSON. Returns 1 when it gave the head its version.
 */
const GIVE_VERSION = `
if redis.call('HEXISTS', KEYS[1], 'version') == 1 or redis.call('HEXISTS', KEYS[1], 'spec') == 0 then return 0 end
local spec, parser = unpack(redis.call('HMGET', KEYS[1], 'spec', 'parser'))
redis.call('HSET', KEYS[3], 'spec', spec, 'parser', parser or '')
redis.call('HSET', KEYS[2], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[1], 'version', ARGV[2], 'latest', ARGV[2])
return 1`;

export const giveDefinitionsVersions: Migration<TenancyKeys> = {
  version: 5,
  description: 'give every definition stored before versions its content as version, published',
  async run({ redis, keys, log, signal }) {
    const scopes: DefinitionScope[] = [
      { kind: 'public' },
      ...(await redis.smembers(keys.envs())).map((env) => ({ kind: 'private', env }) as const),
    ];
    let given = 0;
    for (const scope of scopes) {
      signal.throwIfAborted();
      for (const name of await redis.smembers(keys.definitions(scope))) {
        const head = keys.definition(scope, name);
        const [revision, updatedUTC] = await redis.hmget(head, 'revision', 'updatedUTC');
        const version = Math.max(1, Number(revision ?? 1) || 1);
        const meta = {
          version,
          createdUTC: updatedUTC ?? '',
          createdBy: 'migration',
          note: 'stored before versions',
        };
        given += (await redis.eval(
          GIVE_VERSION,
          3,
          head,
          keys.definitionVersions(scope, name),
          keys.definitionVersion(scope, name, version),
          JSON.stringify({ ...meta, publishedUTC: updatedUTC ?? '', publishedBy: 'migration' }),
          version,
        )) as number;
      }
    }
    log.info({ definitions: given }, 'definitions given their versions');
  },
};
