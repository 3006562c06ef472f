/**
 * Administration of an environment's credentials: API keys and CLI bearer tokens (users are in
 * admin-users.ts; the checks of their input are here, shared with the CLI and provisioning).
 * Secrets are returned once by the create operations and stored only as hashes. The `put…`
 * operations serve provisioning: they take the secret from the caller and report whether anything
 * changed, so applying the same files twice writes nothing. CLI tokens belong to no user: user
 * changes leave them alone.
 *
 * Rotating an API key creates its successor and gives the old one an expiry (`expiresMs` on its
 * record, which Redis drops then: PEXPIREAT), so devices can move over while both work; the
 * gateway, MQTT and login refuse the old key once past it, as if it were revoked. The successor keeps
 * the old key's auto-create rule and the count of the devices it created (admin-api-key-rules.ts).
 */
import { AppError } from '../errors/app-error.ts';
import {
  checkAutoCreateRule,
  createApiKeyRuleAdmin,
  devicesCreatedBy,
  inheritedRule,
  requireRuleDefinition,
  revisionOf,
  type AutoCreateRuleInput,
} from './admin-api-key-rules.ts';
import { checkName, invalid, type AdminContext } from './admin-support.ts';
import { encodeToken, pipelineValues } from './records.ts';
import { generateApiKey, generateToken, secretId, sha256Hex } from './secrets.ts';
import {
  SCOPES,
  USER_ROLES,
  type AutoCreateRule,
  type Scope,
  type TokenRecord,
  type UserRole,
} from './types.ts';

/** Metadata kept per API key / CLI token in `Keys.envApiKeys` / `Keys.envTokens`. */
export interface CredentialMeta {
  id: string;
  name: string;
  createdUTC: string;
  /** SHA-256 hex of the secret (addresses the record; not the secret). */
  hash: string;
  /** Null or absent = never (an API key has one once a rotation replaced it). */
  expiresUTC?: string | null;
  /** Tokens only; absent on tokens created before scopes existed: `read`. */
  scopes?: Scope[];
  /** API keys: counts the changes of the key's auto-create rule; absent (stored before): 1. */
  revision?: number;
  /** API keys: what the key may create of devices it does not know; absent: nothing. */
  autoCreate?: AutoCreateRule;
  /** API keys: where the devices it created are counted (Keys.autoCreated); absent: its id. */
  counterId?: string;
}

export const API_KEY_FORMAT = /^vk_[A-Za-z0-9_-]{20,}$/;
export const TOKEN_FORMAT = /^vt_[A-Za-z0-9_-]{20,}$/;
export const MIN_PASSWORD_LENGTH = 8;
/** Longest overlap of a rotated API key with its successor: 30 days. */
export const MAX_ROTATION_OVERLAP_MS = 30 * 86_400_000;
/** Login refuses longer passwords unread (scrypt's cost grows with the input). */
export const MAX_PASSWORD_LENGTH = 1024;

/**
 * The scopes named (`read`, `write`, `admin`, in any order), in canonical order. Each scope needs
 * the ones before it (a token that writes must read, one that manages must write), so `write` alone
 * or `read,admin` is refused, as is an unknown name or none.
 */
export function checkScopes(names: readonly string[]): Scope[] {
  const unknown = names.filter((n) => !(SCOPES as readonly string[]).includes(n));
  if (unknown.length > 0 || names.length === 0)
    throw invalid(
      `invalid scope ${JSON.stringify(names.join(','))}: use read, read,write or read,write,admin`,
    );
  const scopes = SCOPES.filter((s) => names.includes(s));
  if (scopes.includes('admin') && scopes.length !== SCOPES.length)
    throw invalid('a token that manages must also read and write: use read,write,admin');
  if (!scopes.includes('read')) throw invalid('a token that writes must also read: use read,write');
  return scopes;
}

/** Throws INVALID_INPUT unless the password's length is within MIN/MAX_PASSWORD_LENGTH. */
export function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH)
    throw invalid(`password too short: use at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > MAX_PASSWORD_LENGTH)
    throw invalid(`password too long: use at most ${MAX_PASSWORD_LENGTH} characters`);
}

/** Throws INVALID_INPUT unless `role` is a user role. */
export function checkRole(role: string): UserRole {
  const found = USER_ROLES.find((r) => r === role);
  if (!found) throw invalid(`invalid role ${JSON.stringify(role)}: use admin, operator or viewer`);
  return found;
}

const scopesOf = (meta: CredentialMeta): Scope[] => meta.scopes ?? ['read'];
const hasPassed = (utc: string | null | undefined, nowMs: number) => !!utc && Date.parse(utc) <= nowMs;

/** An API key as it is listed and audited: never the key or its hash. */
export interface PublicApiKey {
  id: string;
  name: string;
  createdUTC: string;
  /** Null: no expiry; set on a key replaced by a rotation. */
  expiresUTC: string | null;
  /** Null: the key creates no device. */
  autoCreate: AutoCreateRule | null;
  /** Devices its auto-create rule created, its predecessors' by rotation counted. */
  devicesCreated: number;
  revision: number;
}

export const publicApiKey = (m: CredentialMeta, devicesCreated = 0): PublicApiKey => ({
  id: m.id,
  name: m.name,
  createdUTC: m.createdUTC,
  expiresUTC: m.expiresUTC ?? null,
  autoCreate: m.autoCreate ?? null,
  devicesCreated,
  revision: revisionOf(m),
});

/** A service token as it is listed (with its last use) and audited: never the token or its hash. */
export interface PublicToken {
  id: string;
  name: string;
  scopes: Scope[];
  createdUTC: string;
  expiresUTC: string | null;
  /** Null: never used (or not since last uses were noted). */
  lastUsedUTC: string | null;
}

export const publicToken = (m: CredentialMeta, lastUsedMs: number | null = null): PublicToken => ({
  id: m.id,
  name: m.name,
  scopes: scopesOf(m),
  createdUTC: m.createdUTC,
  expiresUTC: m.expiresUTC ?? null,
  lastUsedUTC: lastUsedMs === null ? null : new Date(lastUsedMs).toISOString(),
});

/**
 * The name of a rotated key's successor: `<name>-r<n>`, the lowest n ≥ 2 not taken, where a name
 * that ends in `-r<n>` already goes on from that n.
 */
export function successorName(name: string, taken: ReadonlySet<string>): string {
  const match = /^(.*)-r(\d{1,6})$/.exec(name);
  const base = match?.[1] ?? name;
  let n = match ? Number(match[2]) + 1 : 2;
  for (;;) {
    const suffix = `-r${n}`;
    const candidate = `${base.slice(0, 128 - suffix.length).trimEnd()}${suffix}`;
    if (!taken.has(candidate)) return candidate;
    n++;
  }
}
const sameScopes = (a: readonly Scope[], b: readonly Scope[]) => a.join(',') === b.join(',');

const notFound = (idOrName: string) =>
  new AppError('CREDENTIAL_NOT_FOUND', `no API key or token ${JSON.stringify(idOrName)}`);

export function createCredentialAdmin(ctx: AdminContext) {
  const { redis, keys } = ctx;

  async function listMeta(key: string): Promise<CredentialMeta[]> {
    const h = await redis.hgetall(key);
    return Object.values(h)
      .map((json) => JSON.parse(json) as CredentialMeta)
      .sort((a, b) => a.name.localeCompare(b.name) || a.id.localeCompare(b.id));
  }

  /** The credentials of `key` that have not expired; the metadata of those that have is removed. */
  async function listLive(key: string): Promise<CredentialMeta[]> {
    const now = ctx.clock();
    const all = await listMeta(key);
    const expired = all.filter((m) => hasPassed(m.expiresUTC, now));
    if (expired.length > 0) await redis.hdel(key, ...expired.map((m) => m.id));
    return all.filter((m) => !expired.includes(m));
  }

  async function findMeta(key: string, idOrName: string): Promise<CredentialMeta> {
    const all = await listMeta(key);
    const found = all.find((m) => m.id === idOrName) ?? all.find((m) => m.name === idOrName);
    if (!found) throw notFound(idOrName);
    return found;
  }

  /** Stores an API key (by hash) under `name`, replacing a key of the same name. */
  async function storeApiKey(
    env: string,
    name: string,
    key: string,
    autoCreate?: AutoCreateRule,
  ): Promise<{ meta: CredentialMeta; changed: boolean }> {
    await ctx.requireEnv(env);
    const hash = sha256Hex(key);
    const existing = (await listMeta(keys.envApiKeys(env))).find((m) => m.name === name);
    if (existing?.hash === hash) return { meta: existing, changed: false };
    await refuseReuse(keys.apiKey(hash), 'API key');
    // A key of the same name given another secret keeps its rule and count, as a rotation does.
    const meta: CredentialMeta = {
      id: secretId(hash),
      name,
      createdUTC: ctx.nowUTC(),
      hash,
      ...(existing ? inheritedRule(existing) : {}),
      ...(autoCreate === undefined ? {} : { autoCreate }),
    };
    const m = redis.multi();
    if (existing) m.del(keys.apiKey(existing.hash)).hdel(keys.envApiKeys(env), existing.id);
    m.hset(keys.apiKey(hash), { env, id: meta.id, name, createdUTC: meta.createdUTC });
    m.hset(keys.envApiKeys(env), meta.id, JSON.stringify(meta));
    await m.exec();
    return { meta, changed: true };
  }

  async function storeToken(
    env: string,
    name: string,
    token: string,
    expiresMs: number,
    scopes: Scope[],
  ): Promise<{ meta: CredentialMeta; changed: boolean }> {
    await ctx.requireEnv(env);
    const hash = sha256Hex(token);
    const expiresUTC = expiresMs === 0 ? null : new Date(expiresMs).toISOString();
    const existing = (await listMeta(keys.envTokens(env))).find((m) => m.name === name);
    if (
      existing?.hash === hash &&
      existing.expiresUTC === expiresUTC &&
      sameScopes(scopesOf(existing), scopes)
    )
      return { meta: existing, changed: false };
    if (existing?.hash !== hash) await refuseReuse(keys.token(hash), 'token');
    const meta: CredentialMeta = {
      id: secretId(hash),
      name,
      createdUTC: ctx.nowUTC(),
      hash,
      expiresUTC,
      scopes,
    };
    const record: TokenRecord = {
      env,
      id: meta.id,
      kind: 'cli',
      subject: name,
      expiresMs,
      createdUTC: meta.createdUTC,
      scopes,
    };
    const m = redis.multi();
    if (existing) m.del(keys.token(existing.hash)).hdel(keys.envTokens(env), existing.id);
    m.hset(keys.token(hash), encodeToken(record));
    if (expiresMs !== 0) m.pexpireat(keys.token(hash), expiresMs);
    m.hset(keys.envTokens(env), meta.id, JSON.stringify(meta));
    await m.exec();
    return { meta, changed: true };
  }

  /** One secret, one record: a key or token already registered elsewhere is refused. */
  async function refuseReuse(recordKey: string, what: string) {
    if (await redis.exists(recordKey)) {
      throw new AppError(
        'ALREADY_EXISTS',
        `this ${what} is already registered under another name or environment`,
      );
    }
  }

  async function revoke(metaKey: string, recordKey: (hash: string) => string, idOrName: string) {
    const meta = await findMeta(metaKey, idOrName);
    await redis.multi().del(recordKey(meta.hash)).hdel(metaKey, meta.id).exec();
    return meta;
  }

  /** The key's metadata by id or name; CREDENTIAL_NOT_FOUND when there is none (or it expired). */
  async function liveApiKey(env: string, idOrName: string): Promise<CredentialMeta> {
    const meta = await findMeta(keys.envApiKeys(env), idOrName);
    if (hasPassed(meta.expiresUTC, ctx.clock())) throw notFound(idOrName);
    return meta;
  }

  /** The key as listed, with the count of the devices it created. */
  async function shown(env: string, meta: CredentialMeta): Promise<PublicApiKey> {
    const [count] = await devicesCreatedBy(ctx, env, [meta]);
    return publicApiKey(meta, count);
  }

  const rules = createApiKeyRuleAdmin(ctx, liveApiKey);

  return {
    /**
     * Creates an API key (shown once, in the answer), with an auto-create rule when `autoCreate`
     * is given (its definition must exist: DEFINITION_NOT_FOUND).
     */
    async createApiKey(env: string, name?: string, autoCreate?: AutoCreateRuleInput) {
      if (name !== undefined) checkName('key name', name);
      const rule = autoCreate === undefined ? undefined : checkAutoCreateRule(autoCreate);
      await ctx.requireEnv(env);
      if (rule) await requireRuleDefinition(ctx, env, rule);
      const key = generateApiKey();
      const keyName = name ?? `key-${secretId(sha256Hex(key))}`;
      if (name !== undefined && (await listMeta(keys.envApiKeys(env))).some((m) => m.name === name)) {
        throw new AppError('ALREADY_EXISTS', `an API key named ${name} exists already in ${env}`);
      }
      const { meta } = await storeApiKey(env, keyName, key, rule);
      return { id: meta.id, name: meta.name, createdUTC: meta.createdUTC, autoCreate: rule ?? null, key };
    },
    /**
     * Sets, changes (a rule) or clears (null) the key's auto-create rule; `revision`: the key's
     * revision the change is based on (CONFLICT when it has another). Answers the key before and
     * after, as listed, and whether anything changed.
     */
    async updateApiKey(
      env: string,
      idOrName: string,
      change: { autoCreate: AutoCreateRuleInput | null; revision?: number },
    ): Promise<{ before: PublicApiKey; after: PublicApiKey; changed: boolean }> {
      const r = await rules.setAutoCreate(env, idOrName, change.autoCreate, change.revision);
      return { before: await shown(env, r.before), after: await shown(env, r.after), changed: r.changed };
    },
    /** Provisioning: stores a given key under `name`. */
    async putApiKey(env: string, name: string, key: string): Promise<boolean> {
      checkName('key name', name);
      if (!API_KEY_FORMAT.test(key))
        throw invalid(`API key ${name}: expected vk_ followed by at least 20 base64url characters`);
      return (await storeApiKey(env, name, key)).changed;
    },
    /** API keys; the metadata of expired ones (whose records Redis already dropped) is pruned. */
    async listApiKeys(env: string): Promise<PublicApiKey[]> {
      await ctx.requireEnv(env);
      const live = await listLive(keys.envApiKeys(env));
      const counts = await devicesCreatedBy(ctx, env, live);
      return live.map((m, i) => publicApiKey(m, counts[i]));
    },
    /** The key, by id or name, as it is listed; CREDENTIAL_NOT_FOUND when there is none (or it expired). */
    async getApiKey(env: string, idOrName: string): Promise<PublicApiKey> {
      await ctx.requireEnv(env);
      return shown(env, await liveApiKey(env, idOrName));
    },
    /** Revokes the key at once; answers it as it was listed. */
    async revokeApiKey(env: string, idOrName: string): Promise<PublicApiKey> {
      await ctx.requireEnv(env);
      return shown(env, await revoke(keys.envApiKeys(env), (h) => keys.apiKey(h), idOrName));
    },
    /**
     * Creates the successor of an API key (named `name`, or the old name with a suffix:
     * successorName) and lets the old key work `overlapMs` more (0: revoked at once), then not at
     * all. A key that expires sooner already keeps its expiry. Returns the new key (shown once) and
     * the old one as it is now (`expiresUTC`; null `after` when revoked at once).
     */
    async rotateApiKey(env: string, idOrName: string, overlapMs: number, name?: string) {
      if (name !== undefined) checkName('key name', name);
      if (!Number.isFinite(overlapMs) || overlapMs < 0 || overlapMs > MAX_ROTATION_OVERLAP_MS)
        throw invalid('the overlap must be within 0 and 30 days');
      await ctx.requireEnv(env);
      const metaKey = keys.envApiKeys(env);
      const all = await listLive(metaKey);
      const old = all.find((m) => m.id === idOrName) ?? all.find((m) => m.name === idOrName);
      if (!old) throw notFound(idOrName);
      const names = new Set(all.map((m) => m.name));
      if (name !== undefined && names.has(name))
        throw new AppError('ALREADY_EXISTS', `an API key named ${name} exists already in ${env}`);
      const key = generateApiKey();
      const hash = sha256Hex(key);
      const now = ctx.clock();
      const created: CredentialMeta = {
        id: secretId(hash),
        name: name ?? successorName(old.name, names),
        createdUTC: new Date(now).toISOString(),
        hash,
        ...inheritedRule(old),
      };
      const keptMs = old.expiresUTC ? Date.parse(old.expiresUTC) : Infinity;
      const expiresMs = Math.min(now + overlapMs, keptMs);
      const m = redis.multi();
      m.hset(keys.apiKey(hash), { env, id: created.id, name: created.name, createdUTC: created.createdUTC });
      m.hset(metaKey, created.id, JSON.stringify(created));
      let after: CredentialMeta | null = null;
      if (overlapMs === 0) {
        m.del(keys.apiKey(old.hash)).hdel(metaKey, old.id);
      } else {
        after = { ...old, expiresUTC: new Date(expiresMs).toISOString() };
        m.hset(keys.apiKey(old.hash), 'expiresMs', String(expiresMs));
        m.pexpireat(keys.apiKey(old.hash), expiresMs);
        m.hset(metaKey, old.id, JSON.stringify(after));
      }
      pipelineValues(await m.exec());
      const [count = 0] = await devicesCreatedBy(ctx, env, [old]);
      return {
        created: { ...publicApiKey(created, count), key },
        before: publicApiKey(old, count),
        after: after && publicApiKey(after, count),
      };
    },

    /** Creates a long-lived bearer token; `expiresMs` 0 = never; `read` unless `scopes` say more. */
    async createToken(env: string, name: string | undefined, expiresMs: number, scopes: Scope[] = ['read']) {
      if (name !== undefined) checkName('key name', name);
      const token = generateToken();
      const tokenName = name ?? `token-${secretId(sha256Hex(token))}`;
      if (name !== undefined && (await listMeta(keys.envTokens(env))).some((m) => m.name === name)) {
        throw new AppError('ALREADY_EXISTS', `a token named ${name} exists already in ${env}`);
      }
      const { meta } = await storeToken(env, tokenName, token, expiresMs, scopes);
      return {
        id: meta.id,
        name: meta.name,
        createdUTC: meta.createdUTC,
        expiresUTC: meta.expiresUTC ?? null,
        scopes,
        token,
      };
    },
    async putToken(
      env: string,
      name: string,
      token: string,
      expiresMs: number,
      scopes: Scope[] = ['read'],
    ): Promise<boolean> {
      checkName('key name', name);
      if (!TOKEN_FORMAT.test(token))
        throw invalid(`token ${name}: expected vt_ followed by at least 20 base64url characters`);
      return (await storeToken(env, name, token, expiresMs, scopes)).changed;
    },
    /**
     * CLI tokens with their last use; the metadata of expired ones (whose records Redis already
     * dropped) is pruned.
     */
    async listTokens(env: string): Promise<PublicToken[]> {
      await ctx.requireEnv(env);
      const live = await listLive(keys.envTokens(env));
      if (live.length === 0) return [];
      const pipe = redis.pipeline();
      for (const t of live) pipe.hget(keys.token(t.hash), 'lastUsedMs');
      const used = pipelineValues<string | null>(await pipe.exec());
      return live.map((t, i) => {
        const ms = Number(used[i] ?? 0);
        return publicToken(t, ms > 0 ? ms : null);
      });
    },
    /** Revokes the token at once; answers it as it was listed (without its last use). */
    async revokeToken(env: string, idOrName: string): Promise<PublicToken> {
      await ctx.requireEnv(env);
      return publicToken(await revoke(keys.envTokens(env), (h) => keys.token(h), idOrName));
    },
  };
}

export type CredentialAdmin = ReturnType<typeof createCredentialAdmin>;
