/**
 * How tenancy records are written to and read from Redis hashes (layout: tenancy-keys.ts and
 * ./types.ts). One codec per record, so the reading store and the admin commands agree.
 */
import type { DefinitionSpec, Locale, ThresholdSet } from '../domain/types.ts';
import {
  SCOPES,
  type ApiKeyRecord,
  type DefinitionRecord,
  type DeviceRecord,
  type Environment,
  type PreparserRecord,
  type Scope,
  type TokenRecord,
  type UserRecord,
  type UserRole,
} from './types.ts';

type Hash = Record<string, string>;
const isEmpty = (h: Hash | null | undefined): h is null | undefined => !h || Object.keys(h).length === 0;

export function decodeEnvironment(name: string, h: Hash | null | undefined): Environment | null {
  if (isEmpty(h)) return null;
  return { name, locale: (h.locale === 'nl' ? 'nl' : 'en') satisfies Locale, createdUTC: h.createdUTC ?? '' };
}

export function decodeApiKey(h: Hash | null | undefined): ApiKeyRecord | null {
  if (isEmpty(h) || !h.env || !h.id) return null;
  const expiresMs = Number(h.expiresMs ?? 0) || 0;
  return {
    env: h.env,
    id: h.id,
    name: h.name ?? '',
    createdUTC: h.createdUTC ?? '',
    ...(expiresMs === 0 ? {} : { expiresMs }),
  };
}

/** Whether a key or token with this expiry (epoch ms, 0 or absent = never) is refused at `nowMs`. */
export const hasExpired = (expiresMs: number | undefined, nowMs: number): boolean =>
  expiresMs !== undefined && expiresMs !== 0 && nowMs >= expiresMs;

export const encodeToken = (t: TokenRecord): Hash => ({
  env: t.env,
  id: t.id,
  kind: t.kind,
  subject: t.subject,
  expiresMs: String(t.expiresMs),
  createdUTC: t.createdUTC,
  scopes: t.scopes.join(','),
  ...(t.generation === undefined ? {} : { generation: t.generation }),
});

/**
 * The token's record. A token stored without scopes (before they existed) gets `read` as a CLI
 * token and `read,write` as a login token, which resolving then narrows to its user's role.
 */
export function decodeToken(h: Hash | null | undefined): TokenRecord | null {
  if (isEmpty(h) || !h.env || !h.id) return null;
  const kind = h.kind === 'login' ? 'login' : 'cli';
  return {
    env: h.env,
    id: h.id,
    kind,
    subject: h.subject ?? '',
    expiresMs: Number(h.expiresMs ?? 0) || 0,
    createdUTC: h.createdUTC ?? '',
    scopes: h.scopes === undefined ? (kind === 'login' ? SCOPES : ['read']) : parseStoredScopes(h.scopes),
    ...(h.generation === undefined ? {} : { generation: h.generation }),
  };
}

/** Stored scopes; names this version does not know grant nothing. */
const parseStoredScopes = (text: string): Scope[] => SCOPES.filter((s) => text.split(',').includes(s));

export function decodeUser(json: string | null | undefined): UserRecord | null {
  if (!json) return null;
  return JSON.parse(json) as UserRecord;
}

/**
 * Whether something issued under credential generation `issued` (a session, a login token) still
 * belongs to `user`'s current credentials. A user and a credential stored before generations
 * existed have none, and match each other until the user's next change.
 */
export const isCurrentGeneration = (user: UserRecord, issued: string | undefined): boolean =>
  (user.generation ?? '') === (issued ?? '');

/** The user's role; users stored before roles existed are operators. */
export const roleOf = (user: UserRecord): UserRole => user.role ?? 'operator';

/** The user's revision; users stored before revisions existed are at 1. */
export const userRevisionOf = (user: UserRecord): number => user.revision ?? 1;

/** Fields of `Keys.definitionVersion(scope, name, n)`: one version's content. */
export const encodeDefinitionVersion = (spec: DefinitionSpec, parserSource: string): Hash => ({
  spec: JSON.stringify(spec),
  parser: parserSource,
});

export function decodeDefinition(
  scope: { isPublic: true } | { isPublic: false; env: string },
  h: Hash | null | undefined,
): DefinitionRecord | null {
  if (isEmpty(h) || h.spec === undefined) return null;
  return {
    isPublic: scope.isPublic,
    ...(scope.isPublic ? {} : { env: scope.env }),
    spec: JSON.parse(h.spec) as DefinitionSpec,
    parserSource: h.parser ?? '',
    // Heads stored before versions existed (migrated at start) counted their content in `revision`.
    version: Number(h.version ?? h.revision ?? 0),
    latest: Number(h.latest ?? h.version ?? h.revision ?? 0),
    revision: Number(h.revision ?? 0),
    updatedUTC: h.updatedUTC ?? '',
  };
}

export function decodePreparser(h: Hash | null | undefined): PreparserRecord | null {
  if (isEmpty(h) || h.source === undefined) return null;
  return { source: h.source, enabled: h.enabled === '1', revision: Number(h.revision ?? 0) };
}

/**
 * Fields of `Keys.device(env, name)` but the revision (written by the script that checks it):
 * availabilityMinutes absent = inherit, labels absent = none.
 */
export function encodeDevice(d: DeviceRecord): Hash {
  const h: Hash = {
    displayName: d.displayName,
    definitionName: d.definitionName,
    definitionIsPublic: d.definitionIsPublic ? '1' : '0',
    createdUTC: d.createdUTC,
  };
  if (d.availabilityMinutes !== undefined) h.availabilityMinutes = String(d.availabilityMinutes);
  if (Object.keys(d.labels).length > 0) h.labels = JSON.stringify(d.labels);
  return h;
}

export function decodeDevice(
  env: string,
  deviceName: string,
  h: Hash | null | undefined,
): DeviceRecord | null {
  if (isEmpty(h) || h.definitionName === undefined) return null;
  const minutes = h.availabilityMinutes === undefined ? undefined : Number(h.availabilityMinutes);
  return {
    env,
    deviceName,
    displayName: h.displayName ?? deviceName,
    definitionName: h.definitionName,
    definitionIsPublic: h.definitionIsPublic === '1',
    ...(minutes !== undefined && Number.isFinite(minutes) ? { availabilityMinutes: minutes } : {}),
    labels: h.labels === undefined ? {} : decodeLabels(h.labels),
    revision: Number(h.revision ?? 1) || 1,
    createdUTC: h.createdUTC ?? '',
  };
}

/** Labels as stored (a JSON object of strings), without a prototype: keys are users' names. */
function decodeLabels(json: string): Record<string, string> {
  const out = Object.create(null) as Record<string, string>;
  for (const [k, v] of Object.entries(JSON.parse(json) as Record<string, unknown>))
    if (typeof v === 'string') out[k] = v;
  return out;
}

/**
 * A device's override of one data point's rules as stored: its set, and its revision, which counts
 * the override's changes (one stored before overrides had revisions counts as revision 1). The
 * revision is for administrators (an update based on another one is refused): decodeThresholds
 * strips it, so the worker and the domain see the set alone.
 */
export interface StoredOverride {
  set: ThresholdSet;
  revision: number;
}

/** The field value of an override in `TenancyKeys.deviceThresholds`: `{rules, hysteresis, stale?, revision}`. */
export const encodeOverride = (set: ThresholdSet, revision: number): string =>
  JSON.stringify({ ...set, revision });

export function decodeOverride(json: string): StoredOverride {
  const { revision, ...set } = JSON.parse(json) as ThresholdSet & { revision?: unknown };
  const valid = typeof revision === 'number' && Number.isSafeInteger(revision) && revision > 0;
  return { set, revision: valid ? revision : 1 };
}

/** A device's threshold overrides hash with each override's revision, by sensor name. */
export function decodeOverrides(h: Hash | null | undefined): Map<string, StoredOverride> {
  const out = new Map<string, StoredOverride>();
  // ioredis makes a field such as `__proto__` an own property, so Object.entries sees every field.
  for (const [sensor, json] of Object.entries(h ?? {})) out.set(sensor, decodeOverride(json));
  return out;
}

/** A device's threshold overrides hash (sensor → JSON of its set) by sensor name, without revisions. */
export function decodeThresholds(h: Hash | null | undefined): Map<string, ThresholdSet> {
  const out = new Map<string, ThresholdSet>();
  for (const [sensor, json] of Object.entries(h ?? {})) out.set(sensor, decodeOverride(json).set);
  return out;
}

/** A device's suppressions hash (sensor → until epoch ms, 0 = no expiry) by sensor name. */
export function decodeSuppressed(h: Hash | null | undefined): Map<string, number> {
  const out = new Map<string, number>();
  for (const [sensor, until] of Object.entries(h ?? {})) out.set(sensor, Number(until) || 0);
  return out;
}

/** ioredis pipeline results: [error, value] pairs; the first error is thrown. */
export function pipelineValues<T>(results: [Error | null, unknown][] | null): T[] {
  if (!results) throw new Error('Redis transaction aborted');
  return results.map(([err, value]) => {
    if (err) throw err;
    return value as T;
  });
}
