/**
 * The layouts the management API brought, from data stored before them: audit logs as streams kept
 * by time (layout 4) and definitions with versions (layout 5), each run twice to show it resumes.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.ts';
import { moveAuditLogsToStreams } from '../../src/state/audit-migration.ts';
import { createKeys } from '../../src/keys.ts';
import { createLogger } from '../../src/log/logger.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import { adminDeps } from '../../src/keys.ts';
import { giveDefinitionsVersions } from '../../src/state/definition-version-migration.ts';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import { testConfig } from '../support/context.ts';

function setup() {
  const config = testConfig();
  const redis = connectRedis(config.redisUrl, 'command');
  onTestFinished(() => closeRedis(redis));
  const keys = createKeys(config.keyPrefix);
  const ctx = { redis, keys, log: createLogger('silent'), signal: new AbortController().signal };
  return { redis, keys, ctx };
}

describe('migrations of the management layouts', () => {
  it('moves an audit list to a stream, oldest first, with each entry at its own time', async () => {
    const { redis, keys, ctx } = setup();
    await redis.sadd(keys.envs(), 'acme');
    const old = (atUTC: string, target: string) =>
      JSON.stringify({ atUTC, actor: 'olga', action: 'route.create', target, details: {} });
    // A list keeps the newest first.
    await redis.rpush(
      keys.legacyAuditList('acme'),
      old('2026-11-20T10:00:02.000Z', 'c'),
      old('2026-11-20T10:00:01.000Z', 'b'),
      old('2026-11-20T10:00:00.000Z', 'a'),
    );
    await moveAuditLogsToStreams.run(ctx);
    await moveAuditLogsToStreams.run(ctx);
    expect(await redis.exists(keys.legacyAuditList('acme'))).toBe(0);
    const { entries } = await createAuditLog({ redis, keys, retentionMs: 1e12 }).list('acme', { limit: 10 });
    expect(entries.map((e) => [e.target, e.id])).toEqual([
      ['c', `${Date.parse('2026-11-20T10:00:02.000Z')}-0`],
      ['b', `${Date.parse('2026-11-20T10:00:01.000Z')}-0`],
      ['a', `${Date.parse('2026-11-20T10:00:00.000Z')}-0`],
    ]);
  });

  it('gives a definition stored before versions its content as its published version, numbered by its revision', async () => {
    const { redis, keys, ctx } = setup();
    await redis.sadd(keys.envs(), 'acme');
    const scope = { kind: 'private', env: 'acme' } as const;
    const spec = { name: 'Old', manufacturer: 'Acme', version: '1', dataPoints: [] };
    await redis.sadd(keys.definitions(scope), 'Old');
    await redis.hset(keys.definition(scope, 'Old'), {
      spec: JSON.stringify(spec),
      parser: 'function parsePayload(s) { return {}; }',
      revision: '3',
      updatedUTC: '2026-11-01T00:00:00.000Z',
    });
    await giveDefinitionsVersions.run(ctx);
    await giveDefinitionsVersions.run(ctx);
    const head = await createTenancyStore({ redis, keys }).getDefinition('acme', 'Old', false);
    expect(head).toMatchObject({ version: 3, latest: 3, revision: 3 });
    const admin = createTenancyAdmin(adminDeps(redis, keys));
    expect(await admin.listVersions(scope, 'Old')).toEqual([
      {
        version: 3,
        createdUTC: '2026-11-01T00:00:00.000Z',
        createdBy: 'migration',
        note: 'stored before versions',
        publishedUTC: '2026-11-01T00:00:00.000Z',
        publishedBy: 'migration',
      },
    ]);
    expect((await admin.getVersion(scope, 'Old', 3)).spec).toEqual(spec);
    // The next change is version 4: no sandbox has another text cached under 3.
    const next = await admin.applyDefinition(scope, { ...spec, version: '2' }, 'function parsePayload() {}');
    expect(next).toMatchObject({ version: 4, published: 4, created: true });
  });
});
