/**
 * The read side of the tenancy, used by the gateway, workers, scheduler and read API: environments,
 * credentials, definitions, devices and their overrides, straight from Redis (no cache here;
 * callers cache for at most VIGIL_CREDENTIAL_CACHE_MS). Lists are pipelined: one round trip for
 * the names, one for the records.
 */
import type { Redis } from '../redis/connect.ts';
import type { TenancyKeys, DefinitionScope } from './tenancy-keys.ts';
import {
  decodeApiKey,
  decodeDefinition,
  decodeDevice,
  decodeEnvironment,
  decodePreparser,
  decodeSuppressed,
  decodeThresholds,
  decodeToken,
  decodeUser,
  hasExpired,
  isCurrentGeneration,
  pipelineValues,
  roleOf,
} from './records.ts';
import { sha256Hex } from './secrets.ts';
import { createLogin, type LoginAttempt, type LoginLimits, type LoginResult } from './login.ts';
import type {
  ApiKeyRecord,
  DefinitionRecord,
  DeviceRecord,
  Environment,
  PreparserRecord,
  ThresholdOverrides,
  TokenRecord,
} from './types.ts';
import { ROLE_SCOPES } from './types.ts';

export interface TenancyDeps {
  redis: Redis;
  keys: TenancyKeys;
  /** Epoch ms; Date.now by default. */
  clock?: () => number;
  /** Login lockout (config loginMaxFailures…, loginLockSeconds); DEFAULT_LOGIN_LIMITS when absent. */
  login?: LoginLimits;
}

export interface TenancyStore {
  getEnvironment(env: string): Promise<Environment | null>;
  listEnvironments(): Promise<Environment[]>;
  getDevice(env: string, name: string): Promise<DeviceRecord | null>;
  /** Every device of the environment, sorted by name. */
  listDevices(env: string): Promise<DeviceRecord[]>;
  /** Devices in the order asked, null where one does not exist. */
  getDevices(env: string, names: string[]): Promise<(DeviceRecord | null)[]>;
  /**
   * Whether each name is in the environment's device list, in the order asked, 5,000 names per
   * command: a name not listed has no record (a record is written after its name is listed).
   */
  listedDevices(env: string, names: readonly string[]): Promise<boolean[]>;
  /** How many devices the environment lists. */
  countDevices(env: string): Promise<number>;
  /**
   * The names of the devices whose `devEui` label each DevEUI (lowercase) is, in the order asked,
   * null where no device has it: one HMGET.
   */
  devEuiOwners(env: string, euis: readonly string[]): Promise<(string | null)[]>;
  /**
   * Devices by name after `after` (exclusive), at most `limit`, each with every label of `labels`;
   * `more` when devices may follow. With `before` instead, the last `limit` devices before it (still
   * in name order), `more` when devices may precede them. Read from the label index of the first
   * label when there are labels, else from the environment's device list: one page costs what the
   * page holds.
   */
  pageDevices(env: string, page: DevicePage): Promise<{ devices: DeviceRecord[]; more: boolean }>;
  /** A private definition of `env`, or the public one when `isPublic`. */
  getDefinition(env: string, name: string, isPublic: boolean): Promise<DefinitionRecord | null>;
  /** The environment's private definitions, then the public ones, each sorted by name. */
  listDefinitions(env: string): Promise<DefinitionRecord[]>;
  getPreparser(env: string): Promise<PreparserRecord | null>;
  getThresholdOverrides(env: string, device: string): Promise<ThresholdOverrides>;
  /** Suppressed data points: sensor → until epoch ms (0 = no expiry). */
  getSuppressed(env: string, device: string): Promise<ReadonlyMap<string, number>>;
  /** Threshold overrides and suppressions of several devices in one pipelined read, in the order asked. */
  getDeviceSettings(env: string, devices: string[]): Promise<DeviceSettings[]>;
  /** The key's record, or null when unknown, revoked or past its expiry (a key replaced by a rotation). */
  resolveApiKey(key: string): Promise<ApiKeyRecord | null>;
  /**
   * The token's record, or null when unknown, revoked or expired, and for a login token also when
   * its user was deleted or their credentials changed since it was issued (another generation). A
   * login token's scopes are narrowed to what its user's role allows now, so a user made viewer
   * loses write at once (within the callers' cache time).
   */
  resolveToken(token: string, nowMs: number): Promise<TokenRecord | null>;
  /**
   * Notes that the token whose SHA-256 hex is `tokenHash` was used at `nowMs` (field `lastUsedMs`
   * of its record; never moved back, never written to a record that is gone).
   */
  recordTokenUse(tokenHash: string, nowMs: number): Promise<void>;
  /**
   * Issues a login token (kind `login`) that expires after `ttlSeconds`, bound to the credential
   * `generation` the login was verified against (LoginResult): if the credentials changed since,
   * the token never works.
   */
  createLoginToken(
    env: string,
    username: string,
    ttlSeconds: number,
    generation: string,
  ): Promise<{ token: string; expiresUTC: string }>;
  /** Checks credentials, with the lockout per username and address, username, and address. */
  verifyLogin(attempt: LoginAttempt): Promise<LoginResult>;
  /** The catalog epochs of `scopes` (`public` or environment names), in order; '0' where none was raised. */
  catalogEpochs(scopes: readonly string[]): Promise<string[]>;
}

export interface DevicePage {
  after?: string;
  /** Pages backwards from this name (exclusive); `after` is then ignored. */
  before?: string;
  limit: number;
  labels?: Readonly<Record<string, string>>;
}

export interface DeviceSettings {
  overrides: ThresholdOverrides;
  /** Sensor → suppressed until epoch ms (0 = no expiry). */
  suppressed: ReadonlyMap<string, number>;
}

/** The settings' defaults. */
export const DEFAULT_LOGIN_LIMITS: LoginLimits = {
  maxFailures: 5,
  maxFailuresPerUser: 50,
  maxFailuresPerAddress: 100,
  lockSeconds: 900,
};

/** KEYS[1]: a token's record; ARGV[1]: epoch ms of a use. Sets lastUsedMs when later than the stored one. */
const RECORD_USE = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if tonumber(redis.call('HGET', KEYS[1], 'lastUsedMs') or '0') >= tonumber(ARGV[1]) then return 0 end
redis.call('HSET', KEYS[1], 'lastUsedMs', ARGV[1])
return 1`;

export const scopeOf = (env: string, isPublic: boolean): DefinitionScope =>
  isPublic ? { kind: 'public' } : { kind: 'private', env };

export function createTenancyStore(deps: TenancyDeps): TenancyStore {
  const { redis, keys } = deps;
  const clock = deps.clock ?? Date.now;
  const login = createLogin({ redis, keys, clock, ...(deps.login ?? DEFAULT_LOGIN_LIMITS) });

  async function getDevices(env: string, names: string[]): Promise<(DeviceRecord | null)[]> {
    if (names.length === 0) return [];
    const pipe = redis.pipeline();
    for (const n of names) pipe.hgetall(keys.device(env, n));
    const hashes = pipelineValues<Record<string, string>>(await pipe.exec());
    return names.map((n, i) => decodeDevice(env, n, hashes[i]));
  }

  /**
   * At most `count` device names after `from` (exclusive; before it, nearest first, when
   * `backwards`), from the device list or one label's index.
   */
  async function pageOfNames(
    env: string,
    label: [string, string] | undefined,
    from: string | undefined,
    count: number,
    backwards = false,
  ): Promise<string[]> {
    if (!label) {
      if (backwards)
        return redis.zrevrangebylex(
          keys.devices(env),
          from === undefined ? '+' : `(${from}`,
          '-',
          'LIMIT',
          0,
          count,
        );
      const start = from === undefined ? '-' : `(${from}`;
      return redis.zrangebylex(keys.devices(env), start, '+', 'LIMIT', 0, count);
    }
    const [k, v] = label;
    const prefix = `${v}\n`;
    // Every member of this value sorts below `<value>\n\xff…`: device names are printable ASCII.
    const end = `(${v}\u000b`;
    const members = backwards
      ? await redis.zrevrangebylex(
          keys.labelIndex(env, k),
          from === undefined ? end : `(${prefix}${from}`,
          `[${prefix}`,
          'LIMIT',
          0,
          count,
        )
      : await redis.zrangebylex(
          keys.labelIndex(env, k),
          from === undefined ? `[${prefix}` : `(${prefix}${from}`,
          end,
          'LIMIT',
          0,
          count,
        );
    return members.map((m) => m.slice(prefix.length));
  }

  async function readDefinitions(
    env: string,
    scope: DefinitionScope,
    names: string[],
  ): Promise<DefinitionRecord[]> {
    if (names.length === 0) return [];
    const sorted = [...names].sort();
    const pipe = redis.pipeline();
    for (const n of sorted) pipe.hgetall(keys.definition(scope, n));
    const hashes = pipelineValues<Record<string, string>>(await pipe.exec());
    const s = scope.kind === 'public' ? ({ isPublic: true } as const) : ({ isPublic: false, env } as const);
    return hashes.map((h) => decodeDefinition(s, h)).filter((d): d is DefinitionRecord => d !== null);
  }

  return {
    async getEnvironment(env) {
      return decodeEnvironment(env, await redis.hgetall(keys.env(env)));
    },
    async listEnvironments() {
      const names = (await redis.smembers(keys.envs())).sort();
      if (names.length === 0) return [];
      const pipe = redis.pipeline();
      for (const n of names) pipe.hgetall(keys.env(n));
      const hashes = pipelineValues<Record<string, string>>(await pipe.exec());
      return names.map((n, i) => decodeEnvironment(n, hashes[i])).filter((e): e is Environment => e !== null);
    },
    async getDevice(env, name) {
      return decodeDevice(env, name, await redis.hgetall(keys.device(env, name)));
    },
    async listDevices(env) {
      const names = await redis.zrange(keys.devices(env), 0, -1);
      return (await getDevices(env, names)).filter((d): d is DeviceRecord => d !== null);
    },
    getDevices,
    countDevices: (env) => redis.zcard(keys.devices(env)),
    async devEuiOwners(env, euis) {
      if (euis.length === 0) return [];
      return redis.hmget(keys.devEuis(env), ...euis);
    },
    async listedDevices(env, names) {
      const pipe = redis.pipeline();
      for (let i = 0; i < names.length; i += 5000)
        pipe.zmscore(keys.devices(env), ...names.slice(i, i + 5000));
      const scores = pipelineValues<(string | null)[]>(await pipe.exec()).flat();
      return scores.map((s) => s !== null);
    },
    async pageDevices(env, page) {
      const wanted = Object.entries(page.labels ?? {});
      const matches = (d: DeviceRecord | null): d is DeviceRecord =>
        d !== null && wanted.every(([k, v]) => d.labels[k] === v);
      const devices: DeviceRecord[] = [];
      const backwards = page.before !== undefined;
      let from = backwards ? page.before : page.after;
      const done = (more: boolean) => ({ devices: backwards ? devices.reverse() : devices, more });
      // Names from the index may have left it or their record may have moved on: read on until the
      // page is full or the index ends.
      for (;;) {
        const want = page.limit - devices.length;
        const names = await pageOfNames(env, wanted[0], from, want + 1, backwards);
        const batch = names.slice(0, want);
        devices.push(...(await getDevices(env, batch)).filter(matches));
        if (names.length <= want) return done(false);
        if (devices.length >= page.limit) return done(true);
        from = batch.at(-1);
      }
    },
    async getDefinition(env, name, isPublic) {
      const scope = scopeOf(env, isPublic);
      const s = isPublic ? ({ isPublic: true } as const) : ({ isPublic: false, env } as const);
      return decodeDefinition(s, await redis.hgetall(keys.definition(scope, name)));
    },
    async listDefinitions(env) {
      const priv = scopeOf(env, false);
      const pub = scopeOf(env, true);
      const [own, shared] = await Promise.all([
        redis.smembers(keys.definitions(priv)),
        redis.smembers(keys.definitions(pub)),
      ]);
      const [a, b] = await Promise.all([readDefinitions(env, priv, own), readDefinitions(env, pub, shared)]);
      return [...a, ...b];
    },
    async getPreparser(env) {
      return decodePreparser(await redis.hgetall(keys.preparser(env)));
    },
    async getThresholdOverrides(env, device) {
      return decodeThresholds(await redis.hgetall(keys.deviceThresholds(env, device)));
    },
    async getSuppressed(env, device) {
      return decodeSuppressed(await redis.hgetall(keys.deviceSuppressed(env, device)));
    },
    async getDeviceSettings(env, devices) {
      if (devices.length === 0) return [];
      const pipe = redis.pipeline();
      for (const d of devices)
        pipe.hgetall(keys.deviceThresholds(env, d)).hgetall(keys.deviceSuppressed(env, d));
      const hashes = pipelineValues<Record<string, string>>(await pipe.exec());
      return devices.map((_, i) => ({
        overrides: decodeThresholds(hashes[2 * i]),
        suppressed: decodeSuppressed(hashes[2 * i + 1]),
      }));
    },
    async resolveApiKey(key) {
      const record = decodeApiKey(await redis.hgetall(keys.apiKey(sha256Hex(key))));
      return record && !hasExpired(record.expiresMs, clock()) ? record : null;
    },
    async resolveToken(token, nowMs) {
      const record = decodeToken(await redis.hgetall(keys.token(sha256Hex(token))));
      if (!record) return null;
      if (hasExpired(record.expiresMs, nowMs)) return null;
      if (record.kind === 'cli') return record;
      const user = decodeUser(await redis.hget(keys.users(record.env), record.subject));
      if (!user || !isCurrentGeneration(user, record.generation)) return null;
      const allowed = ROLE_SCOPES[roleOf(user)];
      return { ...record, scopes: record.scopes.filter((s) => allowed.includes(s)) };
    },
    async recordTokenUse(tokenHash, nowMs) {
      await redis.eval(RECORD_USE, 1, keys.token(tokenHash), nowMs);
    },
    createLoginToken: login.createLoginToken,
    verifyLogin: login.verifyLogin,
    async catalogEpochs(scopes) {
      if (scopes.length === 0) return [];
      return (await redis.hmget(keys.catalogEpochs(), ...scopes)).map((v) => v ?? '0');
    },
  };
}

/** Devices read per page while finding those with the labels of a filter. */
const LABELLED_PAGE = 10_000;

/**
 * The names of the environment's devices with every one of `labels`, read a page at a time from
 * the label index of the first label (TenancyStore.pageDevices).
 */
export async function devicesWithLabels(
  tenancy: Pick<TenancyStore, 'pageDevices'>,
  env: string,
  labels: Readonly<Record<string, string>>,
): Promise<Set<string>> {
  const names = new Set<string>();
  let after: string | undefined;
  for (;;) {
    const page = await tenancy.pageDevices(env, {
      labels,
      limit: LABELLED_PAGE,
      ...(after === undefined ? {} : { after }),
    });
    for (const d of page.devices) names.add(d.deviceName);
    const last = page.devices.at(-1);
    if (!page.more || !last) return names;
    after = last.deviceName;
  }
}
