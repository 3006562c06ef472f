/**
 * Records of the tenancy store, as kept in Redis (see tenancy-keys.ts for where).
 * Secrets are stored only as hashes: API keys and tokens as SHA-256 hex (they are 32 random
 * bytes, so a fast hash is safe), passwords with scrypt.
 */
import type { DefinitionSpec, Locale, ThresholdSet } from '../domain/types.ts';

export interface Environment {
  name: string;
  locale: Locale;
  createdUTC: string;
}

/** `Keys.apiKey(sha256hex(key))` is a Redis hash with exactly these fields. */
export interface ApiKeyRecord {
  env: string;
  id: string;
  name: string;
  createdUTC: string;
  /**
   * Epoch ms after which the key is refused, set on a key replaced by a rotation (the record also
   * expires then, PEXPIREAT); absent = no expiry.
   */
  expiresMs?: number;
}

/**
 * What an API key may create of the devices it does not know (an uplink of a LoRaWAN network
 * server names a device Vigil has not been told of): devices of one definition, with `labels` and
 * the DevEUI of the uplink, at most `maxDevices` of them (src/tenancy/auto-devices.ts).
 */
export interface AutoCreateRule {
  definitionName: string;
  definitionIsPublic: boolean;
  /** Labels every device created gets, besides its devEui; {} when none. */
  labels: Readonly<Record<string, string>>;
  /** Most devices the key creates, its predecessors' by rotation counted: 1..AUTO_CREATE_MAX_DEVICES. */
  maxDevices: number;
}

/** The highest maxDevices of an auto-create rule. */
export const AUTO_CREATE_MAX_DEVICES = 100_000;

/**
 * What a bearer token may do: `read` every read endpoint, `write` what an operator changes
 * (acknowledging an alarm, running a parser in the workbench), `admin` the management API (devices,
 * definitions, credentials, users, channels, routes, the audit log). Each scope needs the ones
 * before it: a token that writes reads too, and one that manages also writes.
 */
export const SCOPES = ['read', 'write', 'admin'] as const;
export type Scope = (typeof SCOPES)[number];

/** A user's role: what their login tokens and console sessions may do. */
export const USER_ROLES = ['admin', 'operator', 'viewer'] as const;
export type UserRole = (typeof USER_ROLES)[number];

/** The scopes of each role's login tokens. */
export const ROLE_SCOPES: Readonly<Record<UserRole, readonly Scope[]>> = {
  admin: ['read', 'write', 'admin'],
  operator: ['read', 'write'],
  viewer: ['read'],
};

/**
 * `Keys.token(sha256hex(token))` is a Redis hash with these fields (expiresMs "0" = never), and for
 * a CLI token that has been used, `lastUsedMs` (epoch ms, written by TenancyStore.recordTokenUse at
 * most once a minute per process; not part of the record).
 */
export interface TokenRecord {
  env: string;
  id: string;
  kind: 'login' | 'cli';
  /** Username for login tokens, the token name for CLI tokens. */
  subject: string;
  /** Epoch ms; 0 = no expiry. */
  expiresMs: number;
  createdUTC: string;
  /**
   * Stored comma-separated. Tokens stored before scopes existed have none: a CLI token is then
   * `read` (all it could do), a login token what its user's role allows (tenancy-store.ts).
   */
  scopes: readonly Scope[];
  /**
   * Login tokens: the credential generation of the user it was issued to (UserRecord.generation);
   * the token works only while the user's is the same. Absent on tokens issued before generations
   * existed, which match a user without one.
   */
  generation?: string;
}

export interface UserRecord {
  username: string;
  /** Absent on users created before roles existed: operator, the default. */
  role?: UserRole;
  /** `scrypt$N$r$p$saltB64$hashB64` */
  passwordHash: string;
  mfaEnabled: boolean;
  /** Base32 TOTP secret; present once MFA is being or has been enabled. */
  mfaSecret?: string;
  createdUTC: string;
  /**
   * Random id of the user's current credentials: new when the user is created and whenever the
   * password or MFA changes, so that sessions and login tokens issued under other credentials (or
   * to an earlier user of the same name) no longer match. Absent on users stored before
   * generations existed, until their next change.
   */
  generation?: string;
  /**
   * Counts the record's changes: 1 when created, one more with each change. A change that names the
   * revision it was based on is refused (CONFLICT) when the record has moved on since. Users stored
   * before revisions existed read as 1.
   */
  revision?: number;
  /**
   * A disabled user cannot sign in (ACCOUNT_DISABLED); disabling gives a new generation, which ends
   * what was issued before. Absent: enabled.
   */
  disabled?: boolean;
}

/**
 * A stored definition as devices use it: its published version's spec and parser source. Every
 * change of a definition makes a new immutable version (DefinitionVersionMeta); one of them is
 * published, and workers run that one.
 */
export interface DefinitionRecord {
  isPublic: boolean;
  /** The owning environment for a private definition. */
  env?: string;
  spec: DefinitionSpec;
  parserSource: string;
  /**
   * The published version's number. Versions never change, so sandbox contexts are cached by
   * (scope, name, version), a rollback included.
   */
  version: number;
  /** The newest version's number (a draft when it is not the published one). */
  latest: number;
  /** Counts the head's changes (a new version, a publication): what an update names to be safe. */
  revision: number;
  updatedUTC: string;
}

/** Who made one version of a definition, when and why. */
export interface DefinitionVersionMeta {
  version: number;
  createdUTC: string;
  /** A username, `token:<name>`, `cli:<OS user>`. */
  createdBy: string;
  note: string;
  /** When it was last published, and by whom; absent for a version never published. */
  publishedUTC?: string;
  publishedBy?: string;
}

export interface DeviceRecord {
  env: string;
  deviceName: string;
  displayName: string;
  definitionName: string;
  definitionIsPublic: boolean;
  /** Device override of the availability timeout; undefined = definition's, else the default. */
  availabilityMinutes?: number;
  /** Labels by key (`site: amsterdam`); {} when none. */
  labels: Readonly<Record<string, string>>;
  /**
   * Counts the record's changes: 1 when created, one more with each update. An update that names
   * the revision it was based on is refused (CONFLICT) when the record has moved on since. Records
   * stored before revisions existed read as 1.
   */
  revision: number;
  createdUTC: string;
}

export interface PreparserRecord {
  source: string;
  enabled: boolean;
  revision: number;
}

/**
 * Device-level overrides, by sensor name. A Map, like every lookup by a user's name: a name such as
 * `constructor` or `__proto__` would find Object.prototype's members in a plain object.
 */
export type ThresholdOverrides = ReadonlyMap<string, ThresholdSet>;

/** Whether a user of `role` may do what `scope` covers. */
export const roleAllows = (role: UserRole, scope: Scope): boolean => ROLE_SCOPES[role].includes(scope);
