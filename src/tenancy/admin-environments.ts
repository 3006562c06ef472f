/**
 * Administration of environments: creation, provisioning's create-or-update, and deletion of an
 * environment with everything that belongs to it.
 */
import type { Locale } from '../domain/types.ts';
import { AppError } from '../errors/app-error.ts';
import { checkName, type AdminContext } from './admin-support.ts';
import type { CredentialMeta } from './admin-credentials.ts';

export function createEnvironmentAdmin(ctx: AdminContext) {
  const { redis, keys } = ctx;

  /** Keys matching a pattern, by SCAN (never KEYS, which blocks Redis). */
  async function scanKeys(pattern: string): Promise<string[]> {
    const found: string[] = [];
    let cursor = '0';
    do {
      const [next, batch] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      found.push(...batch);
      cursor = next;
    } while (cursor !== '0');
    return found;
  }

  const hashesOf = async (key: string) =>
    Object.values(await redis.hgetall(key)).map((json) => (JSON.parse(json) as CredentialMeta).hash);

  return {
    /** Creates an environment; ALREADY_EXISTS if it exists. */
    async createEnvironment(env: string, locale: Locale) {
      checkName('environment', env);
      const createdUTC = ctx.nowUTC();
      await ctx.atomically(
        [keys.env(env)],
        async () => {
          if (await redis.exists(keys.env(env)))
            throw new AppError('ALREADY_EXISTS', `environment ${env} exists already`);
        },
        (m) => m.sadd(keys.envs(), env).hset(keys.env(env), { name: env, locale, createdUTC }),
      );
      return { name: env, locale, createdUTC };
    },
    /** Creates the environment or updates its locale; true when something changed. */
    async ensureEnvironment(env: string, locale: Locale): Promise<boolean> {
      checkName('environment', env);
      const current = await redis.hget(keys.env(env), 'locale');
      if (current === locale) return false;
      const m = redis.multi().sadd(keys.envs(), env);
      if (current === null) m.hset(keys.env(env), { name: env, locale, createdUTC: ctx.nowUTC() });
      else m.hset(keys.env(env), 'locale', locale);
      m.hincrby(keys.catalogEpochs(), env, 1);
      await m.exec();
      return true;
    },

    /**
     * Deletes an environment: its keys, tokens, users, private definitions, pre-parser, devices
     * (with state, events and overrides), events and ingestion log. Refused (IN_USE) while it has
     * devices, unless `force`. Login tokens die with the users (resolveToken checks the user).
     */
    async deleteEnvironment(env: string, force: boolean) {
      await ctx.requireEnv(env);
      const devices = await redis.zrange(keys.devices(env), 0, -1);
      if (devices.length > 0 && !force) {
        throw new AppError(
          'IN_USE',
          `environment ${env} has ${devices.length} device(s); delete them first or add --force`,
        );
      }
      const priv = { kind: 'private', env } as const;
      const [apiKeyHashes, tokenHashes, definitions, scanned] = await Promise.all([
        hashesOf(keys.envApiKeys(env)),
        hashesOf(keys.envTokens(env)),
        redis.smembers(keys.definitions(priv)),
        Promise.all(
          [
            keys.loginFailures(env, '*'),
            keys.labelIndex(env, '*'),
            // A private definition's versions (its head is deleted by name below).
            keys.definition(priv, '*'),
            ...ctx.dependents.environmentPatterns(env),
          ].map((p) => scanKeys(p)),
        ),
      ]);
      const m = redis.multi().srem(keys.envs(), env);
      m.del(keys.env(env), keys.envApiKeys(env), keys.envTokens(env), keys.users(env), keys.preparser(env));
      m.del(keys.devices(env), keys.definitions(priv), keys.devEuis(env), keys.autoCreated(env));
      ctx.dependents.deleteEnvironment(m, env);
      for (const h of apiKeyHashes) m.del(keys.apiKey(h));
      for (const h of tokenHashes) m.del(keys.token(h));
      for (const name of definitions) m.del(keys.definition(priv, name));
      for (const d of devices) {
        m.del(keys.device(env, d), keys.deviceThresholds(env, d), keys.deviceSuppressed(env, d));
        ctx.dependents.deleteDevice(m, env, d);
      }
      for (const key of scanned.flat()) m.del(key);
      m.hincrby(keys.catalogEpochs(), env, 1);
      await m.exec();
      return { env, devices: devices.length, apiKeys: apiKeyHashes.length, definitions: definitions.length };
    },
  };
}

export type EnvironmentAdmin = ReturnType<typeof createEnvironmentAdmin>;
