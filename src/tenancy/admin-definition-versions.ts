/**
 * Definitions (public, or private to an environment) and their versions. Every change of a
 * definition — its parser, data points, rules, `for`, `stale`, availability — makes a new immutable
 * version; one version is published, and the definition's head (TenancyKeys.definition) holds a
 * copy of it, which is what workers and readers read in one HGETALL. Publishing another version,
 * an earlier one included (a rollback), rewrites the head in the same transaction that raises the
 * scope's catalog epoch: every worker step that starts after the answer runs the new version.
 *
 * Heads stored before versions existed have no version records of their own until the migration
 * at start (src/state/definition-version-migration.ts) gives each its content as a version.
 */
import { AppError } from '../errors/app-error.ts';
import type { DefinitionSpec } from '../domain/types.ts';
import type { DefinitionScope } from './tenancy-keys.ts';
import { checkName, type AdminContext } from './admin-support.ts';
import { decodeDefinition, encodeDefinitionVersion, pipelineValues } from './records.ts';
import type { DefinitionRecord, DefinitionVersionMeta } from './types.ts';

export const describeScope = (scope: DefinitionScope) =>
  scope.kind === 'public' ? 'public' : `private to ${scope.env}`;

/** The catalog epoch a scope's changes raise (TenancyKeys.catalogEpochs). */
export const epochOf = (scope: DefinitionScope) => (scope.kind === 'public' ? 'public' : scope.env);

/** Who changes a definition, and why (for its versions and the audit log). */
export interface VersionAuthor {
  actor: string;
  note?: string;
}

/** One version as read back. */
export interface DefinitionVersion extends DefinitionVersionMeta {
  spec: DefinitionSpec;
  parserSource: string;
}

export interface ApplyResult {
  name: string;
  /** The version the content is (new, or the latest when it was the same). */
  version: number;
  /** The published version after the change. */
  published: number;
  /** The head's revision after the change. */
  revision: number;
  /** A new version was made. */
  created: boolean;
  /** Something was written (a new version, or one published). */
  changed: boolean;
}

/** Longest note of a version, in characters. */
export const VERSION_NOTE_MAX = 500;

export function createDefinitionVersionAdmin(ctx: AdminContext) {
  const { redis, keys } = ctx;

  const recordScope = (scope: DefinitionScope) =>
    scope.kind === 'public' ? ({ isPublic: true } as const) : ({ isPublic: false, env: scope.env } as const);

  async function head(scope: DefinitionScope, name: string): Promise<DefinitionRecord | null> {
    return decodeDefinition(recordScope(scope), await redis.hgetall(keys.definition(scope, name)));
  }

  async function requireHead(scope: DefinitionScope, name: string): Promise<DefinitionRecord> {
    if (scope.kind === 'private') await ctx.requireEnv(scope.env);
    const found = await head(scope, name);
    if (!found) throw notFound(scope, name);
    return found;
  }

  async function readVersion(
    scope: DefinitionScope,
    name: string,
    version: number,
  ): Promise<{ spec: DefinitionSpec; parserSource: string } | null> {
    const [spec, parser] = await redis.hmget(keys.definitionVersion(scope, name, version), 'spec', 'parser');
    if (spec === null || spec === undefined) return null;
    return { spec: JSON.parse(spec) as DefinitionSpec, parserSource: parser ?? '' };
  }

  async function readMeta(
    scope: DefinitionScope,
    name: string,
    version: number,
  ): Promise<DefinitionVersionMeta> {
    const json = await redis.hget(keys.definitionVersions(scope, name), String(version));
    return json === null
      ? { version, createdUTC: '', createdBy: '', note: '' }
      : (JSON.parse(json) as DefinitionVersionMeta);
  }

  function checkRevision(current: DefinitionRecord | null, expected: number | undefined, name: string) {
    if (expected === undefined) return;
    const actual = current?.revision ?? 0;
    if (actual !== expected)
      throw new AppError(
        'CONFLICT',
        `definition ${name} is at revision ${actual}, not ${expected}: it changed since it was read; read it again and repeat the change`,
        { details: { definitionName: name, revision: actual } },
      );
  }

  function checkNote(note: string | undefined) {
    if (note !== undefined && note.length > VERSION_NOTE_MAX)
      throw new AppError('INVALID_INPUT', `the note is longer than ${VERSION_NOTE_MAX} characters`);
  }

  /** Adds to a transaction the head's publication of `version` (its content and meta). */
  function queuePublish(
    m: Parameters<Parameters<AdminContext['atomically']>[2]>[0],
    scope: DefinitionScope,
    name: string,
    version: number,
    content: { spec: DefinitionSpec; parserSource: string },
    meta: DefinitionVersionMeta,
    author: VersionAuthor,
  ) {
    const nowUTC = ctx.nowUTC();
    m.hset(keys.definition(scope, name), {
      ...encodeDefinitionVersion(content.spec, content.parserSource),
      version: String(version),
      publishedUTC: nowUTC,
    });
    m.hset(
      keys.definitionVersions(scope, name),
      String(version),
      JSON.stringify({ ...meta, publishedUTC: nowUTC, publishedBy: author.actor }),
    );
    m.hincrby(keys.catalogEpochs(), epochOf(scope), 1);
  }

  return {
    /**
     * Makes a version of `spec` and `parserSource` unless the newest version has this content
     * already, and publishes it when `publish` (the default) asks; `revision`, when given, must be
     * the head's (CONFLICT otherwise).
     */
    async applyDefinition(
      scope: DefinitionScope,
      spec: DefinitionSpec,
      parserSource: string,
      opts: { author?: VersionAuthor; publish?: boolean; revision?: number } = {},
    ): Promise<ApplyResult> {
      checkName('definition', spec.name);
      checkNote(opts.author?.note);
      if (scope.kind === 'private') await ctx.requireEnv(scope.env);
      const name = spec.name;
      const author = opts.author ?? { actor: 'cli' };
      const publish = opts.publish ?? true;
      const headKey = keys.definition(scope, name);
      const result: { r?: ApplyResult } = {};
      let write: (m: Parameters<Parameters<AdminContext['atomically']>[2]>[0]) => void = () => undefined;
      await ctx.atomically(
        [headKey, keys.definitionVersions(scope, name)],
        async () => {
          const current = await head(scope, name);
          checkRevision(current, opts.revision, name);
          const latest = current ? await readVersion(scope, name, current.latest) : null;
          const same =
            latest !== null &&
            JSON.stringify(latest.spec) === JSON.stringify(spec) &&
            latest.parserSource === parserSource;
          const version = same && current ? current.latest : (current?.latest ?? 0) + 1;
          // A definition's first version is published whatever `publish` says: a definition is its
          // published version to every device and reader, so it has one from the start.
          const publishes = (publish || !current) && current?.version !== version;
          const created = !same;
          const revision = (current?.revision ?? 0) + (created || publishes ? 1 : 0);
          result.r = {
            name,
            version,
            published: publishes ? version : (current?.version ?? 0),
            revision,
            created,
            changed: created || publishes,
          };
          const meta: DefinitionVersionMeta = same
            ? await readMeta(scope, name, version)
            : { version, createdUTC: ctx.nowUTC(), createdBy: author.actor, note: author.note ?? '' };
          write = (m) => {
            if (!result.r?.changed) return;
            if (created) {
              m.hset(
                keys.definitionVersion(scope, name, version),
                encodeDefinitionVersion(spec, parserSource),
              );
              m.hset(keys.definitionVersions(scope, name), String(version), JSON.stringify(meta));
              m.sadd(keys.definitions(scope), name);
            }
            m.hset(headKey, {
              latest: String(version),
              revision: String(revision),
              updatedUTC: ctx.nowUTC(),
            });
            if (publishes) queuePublish(m, scope, name, version, { spec, parserSource }, meta, author);
          };
        },
        (m) => write(m),
      );
      return result.r as ApplyResult;
    },

    /**
     * Publishes `version` (an earlier one is a rollback): workers run it for every payload of a
     * step that starts after this resolves. `revision`, when given, must be the head's.
     */
    async publishVersion(
      scope: DefinitionScope,
      name: string,
      version: number,
      opts: { author: VersionAuthor; revision?: number },
    ): Promise<{ previous: number; published: number; revision: number; changed: boolean }> {
      checkNote(opts.author.note);
      const headKey = keys.definition(scope, name);
      const out = { previous: 0, published: version, revision: 0, changed: false };
      let write: (m: Parameters<Parameters<AdminContext['atomically']>[2]>[0]) => void = () => undefined;
      await ctx.atomically(
        [headKey, keys.definitionVersions(scope, name)],
        async () => {
          const current = await requireHead(scope, name);
          checkRevision(current, opts.revision, name);
          const content = await readVersion(scope, name, version);
          if (!content)
            throw new AppError('VERSION_NOT_FOUND', `definition ${name} has no version ${version}`, {
              details: { definitionName: name, version },
            });
          out.previous = current.version;
          out.changed = current.version !== version;
          out.revision = current.revision + (out.changed ? 1 : 0);
          const meta = await readMeta(scope, name, version);
          write = (m) => {
            if (!out.changed) return;
            m.hset(headKey, { revision: String(out.revision), updatedUTC: ctx.nowUTC() });
            queuePublish(m, scope, name, version, content, meta, opts.author);
          };
        },
        (m) => write(m),
      );
      return out;
    },

    /** The head (the published version) of a definition; DEFINITION_NOT_FOUND when there is none. */
    getDefinition: requireHead,

    /** Every version's meta, newest first. */
    async listVersions(scope: DefinitionScope, name: string): Promise<DefinitionVersionMeta[]> {
      await requireHead(scope, name);
      const all = await redis.hgetall(keys.definitionVersions(scope, name));
      return Object.values(all)
        .map((json) => JSON.parse(json) as DefinitionVersionMeta)
        .sort((a, b) => b.version - a.version);
    },

    /** One version with its content; VERSION_NOT_FOUND when it does not exist. */
    async getVersion(scope: DefinitionScope, name: string, version: number): Promise<DefinitionVersion> {
      await requireHead(scope, name);
      const [content, meta] = await Promise.all([
        readVersion(scope, name, version),
        readMeta(scope, name, version),
      ]);
      if (!content)
        throw new AppError('VERSION_NOT_FOUND', `definition ${name} has no version ${version}`, {
          details: { definitionName: name, version },
        });
      return { ...meta, ...content };
    },

    /** Deletes a definition with its versions; IN_USE while any device uses it. */
    async deleteDefinition(scope: DefinitionScope, name: string): Promise<DefinitionRecord> {
      const current = await requireHead(scope, name);
      const users = await devicesUsing(scope, name);
      if (users.length > 0) {
        const shown = users.slice(0, 5).join(', ') + (users.length > 5 ? ', …' : '');
        throw new AppError('IN_USE', `definition ${name} is used by ${users.length} device(s): ${shown}`);
      }
      const versions = await redis.hkeys(keys.definitionVersions(scope, name));
      await redis
        .multi()
        .srem(keys.definitions(scope), name)
        .del(
          keys.definition(scope, name),
          keys.definitionVersions(scope, name),
          ...versions.map((v) => keys.definitionVersion(scope, name, Number(v))),
        )
        .hincrby(keys.catalogEpochs(), epochOf(scope), 1)
        .exec();
      return current;
    },
    devicesUsing,
  };

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
}

export type DefinitionVersionAdmin = ReturnType<typeof createDefinitionVersionAdmin>;

function notFound(scope: DefinitionScope, name: string): AppError {
  return new AppError('DEFINITION_NOT_FOUND', `no definition ${name} (${describeScope(scope)})`, {
    details: { definitionName: name },
  });
}
