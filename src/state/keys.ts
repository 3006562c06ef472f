/**
 * The one builder of Redis keys. Every key Vigil writes starts with the configured prefix
 * (VIGIL_KEY_PREFIX, default `vigil`). Keys of one device share the hash tag `{env/device}` so a
 * device's state, thresholds and suppression sit in one Redis Cluster slot and one Lua script
 * may touch them together. The README's "Redis key schema" section mirrors this file.
 */
export interface Keys {
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
  /** Hash for one definition: spec (JSON), parser (source), revision. */
  definition(scope: DefinitionScope, name: string): string;
  /** Hash: source, enabled ("1"/"0"), revision. */
  preparser(env: string): string;
  /** Sorted set (all scores 0, so ordered by name) of the environment's device names. */
  devices(env: string): string;
  /** Hash: displayName, definitionName, definitionIsPublic, availabilityMinutes, createdUTC. */
  device(env: string, device: string): string;
  /** Hash sensorName → JSON {rules, hysteresis}: device threshold overrides. */
  deviceThresholds(env: string, device: string): string;
  /** Hash sensorName → until (epoch ms, 0 = no expiry): suppressed data points. */
  deviceSuppressed(env: string, device: string): string;
  /** Hash of current state: `<sensor>|<field>` per data point plus `@<field>` per device. */
  deviceState(env: string, device: string): string;
  /** Sorted set of `env\ndevice` by availability deadline (epoch ms). */
  availabilityDeadlines(): string;
  /** Sorted set of the environment's events (score = receivedUTC ms, member = event JSON). */
  envEvents(env: string): string;
  /** Sorted set of one device's events (same members as envEvents). */
  deviceEvents(env: string, device: string): string;
  /** List, newest first, capped: ingestion outcomes (JSON). */
  ingestLog(env: string): string;
  /** Hash `<device>|<sensor>` → successful exports, per calendar month `YYYY-MM`. */
  exports(env: string, month: string): string;
  /** Stream of created events waiting to be written to InfluxDB (field `e` = event JSON). */
  eventOutbox(): string;
  /** The layout of the device state hashes ("1": packed, see point-record.ts); absent before. */
  stateLayout(): string;
  /** SCAN pattern matching every device state hash. */
  stateHashes(): string;
  /** Stream of one ingest queue partition (entries: `n` = payload count, `p` = the items, ingest-queue.ts). */
  ingestStream(partition: number): string;
  /** Lease of an ingest partition: the token of the worker that owns it, with a TTL. */
  partitionLease(partition: number): string;
  /** Sorted set of live worker tokens by last heartbeat (epoch ms): sizes each worker's share. */
  queueWorkers(): string;
  /** Stream of queue entries that failed VIGIL_JOB_ATTEMPTS times (kept, not dropped). */
  deadLetters(): string;
  /** Hash env → payloads of that environment in the ingest queue (ingest-queue.ts), for BACKLOG_FULL. */
  queueBacklog(): string;
}

export type DefinitionScope = { kind: 'public' } | { kind: 'private'; env: string };

/** Fields of a data point inside `deviceState`: `<sensorName>|<field>`. */
export const STATE_FIELD = {
  /** Converted value as JSON (number, string, boolean or {lat, lon}). */
  value: 'v',
  /**
   * Everything else of the data point, packed (point-record.ts): measurement time and sub-ms
   * offset, rule index and rules fingerprint, status, last success, status since, and the clock
   * hour of the current value for last24Hours (count, total, min, max, late flag).
   */
  packed: 'p',
} as const;

/** Device-level fields inside `deviceState`. */
export const DEVICE_FIELD = {
  /** Epoch ms of the latest accepted payload's receive time. */
  lastContact: '@lc',
  /** "1" while an Availability (lost) event is open. */
  contactLost: '@lost',
  /** Epoch ms of this device's entry in the availability deadlines set (no later than the real one). */
  deadline: '@dl',
  /** Availability timeout in ms the last payload came with (0: not watched). */
  timeout: '@to',
} as const;

export const stateField = (sensor: string, field: (typeof STATE_FIELD)[keyof typeof STATE_FIELD]): string =>
  `${sensor}|${field}`;

export function createKeys(prefix: string): Keys {
  const p = prefix;
  const dev = (env: string, device: string) => `{${env}/${device}}`;
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
    preparser: (env) => `${p}:env:${env}:preparser`,
    devices: (env) => `${p}:env:${env}:devices`,
    device: (env, d) => `${p}:dev:${dev(env, d)}`,
    deviceThresholds: (env, d) => `${p}:dev:${dev(env, d)}:thresholds`,
    deviceSuppressed: (env, d) => `${p}:dev:${dev(env, d)}:suppressed`,
    deviceState: (env, d) => `${p}:state:${dev(env, d)}`,
    availabilityDeadlines: () => `${p}:availability`,
    envEvents: (env) => `${p}:env:${env}:events`,
    deviceEvents: (env, d) => `${p}:dev:${dev(env, d)}:events`,
    ingestLog: (env) => `${p}:env:${env}:ingest-log`,
    exports: (env, month) => `${p}:env:${env}:exports:${month}`,
    eventOutbox: () => `${p}:event-outbox`,
    stateLayout: () => `${p}:state-layout`,
    stateHashes: () => `${p.replace(/[*?[\]\\]/g, '\\$&')}:state:*`,
    // One hash tag for the whole queue: a worker reads all its partitions in one XREADGROUP.
    ingestStream: (n) => `${p}:{q}:ingest-${n}`,
    partitionLease: (n) => `${p}:{q}:lease-${n}`,
    queueWorkers: () => `${p}:{q}:workers`,
    deadLetters: () => `${p}:{q}:dead`,
    queueBacklog: () => `${p}:{q}:backlog`,
  };
}
