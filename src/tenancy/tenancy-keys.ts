/**
 * Redis keys of the tenancy: environments, credentials, users, definitions, pre-parsers, devices
 * and their settings. Every key starts with the configured prefix (VIGIL_KEY_PREFIX, default
 * `vigil`). A device's keys share the hash tag `{env/device}` with its state, so that they would sit
 * in one Redis Cluster slot. The whole key schema is described in docs/processing.md.
 */
import type { ChainableCommander } from 'ioredis';

export type DefinitionScope = { kind: 'public' } | { kind: 'private'; env: string };

export interface TenancyKeys {
  readonly prefix: string;
  /** Set of environment names. */
  envs(): string;
  /** Hash: name, locale, createdUTC. */
  env(env: string): string;
  /** Hash keyed by API-key id: JSON metadata {id, name, createdUTC, hash}. */
  envApiKeys(env: string): string;
  /** Hash for one API key, addressed by the SHA-256 hex of the key: env, id, name. */
  apiKey(keyHash: string): string;
  /** Hash keyed by token id: JSON metadata {id, name, createdUTC, hash, expiresUTC|null} of CLI tokens (login tokens are not listed). */
  envTokens(env: string): string;
  /** Hash for one bearer token, addressed by SHA-256 hex: env, id, kind, expiresMs. */
  token(tokenHash: string): string;
  /** Hash keyed by username: JSON UserRecord {username, passwordHash, mfaEnabled, mfaSecret?, createdUTC}. */
  users(env: string): string;
  /**
   * Counter of failed logins (expires with the lock window): of a username; with `address`, of a
   * username from that client address; with username '' and `address`, of that address across
   * usernames. Usernames hold no ':', so the three never meet.
   */
  loginFailures(env: string, username: string, address?: string): string;
  /** String, set for a TOTP time step once a code of it has been used (RFC 6238 §5.2: no replay). */
  totpUsed(env: string, username: string, step: number): string;
  /** Set of definition names in a scope (`public` or an environment). */
  definitions(scope: DefinitionScope): string;
  /**
   * Hash for one definition, the head of its versions: spec (JSON) and parser (source) of the
   * published version, version (its number), latest (the newest version's number), revision (counts
   * the head's changes), updatedUTC, publishedUTC.
   */
  definition(scope: DefinitionScope, name: string): string;
  /** Hash version number → JSON DefinitionVersionMeta (who, when, note) of every version. */
  definitionVersions(scope: DefinitionScope, name: string): string;
  /** Hash of one immutable version: spec (JSON), parser (source). */
  definitionVersion(scope: DefinitionScope, name: string, version: number): string;
  /**
   * Hash scope → counter (`public`, or an environment's name): raised by every change of what the
   * workers' catalogs cache (definitions, devices, their settings, pre-parsers), so that a worker
   * reading it at the start of a step sees each change made before the step's payloads were
   * accepted (catalog.ts).
   */
  catalogEpochs(): string;
  /** Hash: source, enabled ("1"/"0"), revision. */
  preparser(env: string): string;
  /** Sorted set (all scores 0, so ordered by name) of the environment's device names. */
  devices(env: string): string;
  /**
   * Sorted set (scores 0) of `<value>\n<device>` for each device with label `labelKey`: the devices
   * of one value, by name, are one lexicographic range. An index only: a reader checks what it
   * finds against the device's record.
   */
  labelIndex(env: string, labelKey: string): string;
  /**
   * Hash DevEUI (lowercase) → the name of the device whose `devEui` label it is. Exact, not an index:
   * written in the script that writes the device's record (lua/put-device.lua), so a DevEUI is
   * never held by two devices.
   */
  devEuis(env: string): string;
  /**
   * Hash counter id → how many devices API keys' auto-create rules created. A key counts under its
   * own id, a rotated key's successor under its predecessor's (CredentialMeta.counterId).
   */
  autoCreated(env: string): string;
  /** Hash: displayName, definitionName, definitionIsPublic, availabilityMinutes, labels (JSON), revision, createdUTC. */
  device(env: string, device: string): string;
  /** Hash sensorName → JSON {rules, hysteresis}: device threshold overrides. */
  deviceThresholds(env: string, device: string): string;
  /** Hash sensorName → until (epoch ms, 0 = no expiry): suppressed data points. */
  deviceSuppressed(env: string, device: string): string;
}

/** The hash tag of a device's keys. */
export const deviceTag = (env: string, device: string): string => `{${env}/${device}}`;

export function tenancyKeys(prefix: string): TenancyKeys {
  const p = prefix;
  const dev = deviceTag;
  const scope = (s: DefinitionScope) => (s.kind === 'public' ? 'public' : `env:${s.env}`);
  return {
    prefix: p,
    envs: () => `${p}:envs`,
    env: (env) => `${p}:env:${env}`,
    envApiKeys: (env) => `${p}:env:${env}:apikeys`,
    apiKey: (h) => `${p}:apikey:${h}`,
    envTokens: (env) => `${p}:env:${env}:tokens`,
    token: (h) => `${p}:token:${h}`,
    users: (env) => `${p}:env:${env}:users`,
    loginFailures: (env, u, a) => `${p}:env:${env}:login-failures:${u}${a === undefined ? '' : `:${a}`}`,
    totpUsed: (env, u, step) => `${p}:env:${env}:totp-used:${u}:${step}`,
    definitions: (s) => `${p}:defs:${scope(s)}`,
    definition: (s, name) => `${p}:def:${scope(s)}:${name}`,
    definitionVersions: (s, name) => `${p}:def:${scope(s)}:${name}:versions`,
    definitionVersion: (s, name, v) => `${p}:def:${scope(s)}:${name}:v:${v}`,
    catalogEpochs: () => `${p}:catalog-epochs`,
    preparser: (env) => `${p}:env:${env}:preparser`,
    devices: (env) => `${p}:env:${env}:devices`,
    labelIndex: (env, k) => `${p}:env:${env}:label-index:${k}`,
    devEuis: (env) => `${p}:env:${env}:dev-euis`,
    autoCreated: (env) => `${p}:env:${env}:auto-created`,
    device: (env, d) => `${p}:dev:${dev(env, d)}`,
    deviceThresholds: (env, d) => `${p}:dev:${dev(env, d)}:thresholds`,
    deviceSuppressed: (env, d) => `${p}:dev:${dev(env, d)}:suppressed`,
  };
}

/**
 * What the rest of Vigil keeps for a device or an environment (state, events, ingestion log,
 * export counts…), deleted with it. The tenancy does not know those keys: the process that runs
 * the administration passes this in (src/keys.ts builds it from every owner's keys).
 */
export interface DependentData {
  /**
   * Adds to `pipe` what is kept for devices being created (that they were never heard from), before
   * their records are written.
   */
  createDevices(pipe: ChainableCommander, env: string, devices: readonly string[]): void;
  /** Adds to `multi` the deletion of what is kept for one device. */
  deleteDevice(multi: ChainableCommander, env: string, device: string): void;
  /** Adds to `multi` the deletion of what is kept for an environment as a whole (not per device). */
  deleteEnvironment(multi: ChainableCommander, env: string): void;
  /** SCAN patterns of further keys kept per environment (deleted key by key). */
  environmentPatterns(env: string): string[];
}
