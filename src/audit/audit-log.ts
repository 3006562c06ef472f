/**
 * The audit log of an environment: every change made through the management API, the console or
 * the `vigil` command, and every alarm acknowledgement — who, when, what, and the record before and
 * after (secrets masked). A Redis stream per environment (AuditKeys.auditLog), kept by time
 * (VIGIL_AUDIT_RETENTION_DAYS), not by a count that one large import could flush; an import is one
 * entry with its counts. Acknowledgements are appended by the acknowledging script itself
 * (`withAuditAppend`), everything else right after the change (src/management/management.ts).
 */
import { readFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { AppError } from '../errors/app-error.ts';
import type { Redis } from '../redis/connect.ts';
import type { AuditKeys } from './audit-keys.ts';

const APPEND_AUDIT_LUA = readFileSync(new URL('./lua/append-audit.lua', import.meta.url), 'utf8');

/** `script` with the function `appendAudit(key, nowMs, keepFromMs, json)` in front of it. */
export const withAuditAppend = (script: string): string => `${APPEND_AUDIT_LUA}\n${script}`;

const APPEND = withAuditAppend('return appendAudit(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3])');

/** What a change is, `<resource>.<verb>`: `device.create`, `definition.publish`, `alarm.acknowledge`… */
export type AuditAction = `${string}.${string}`;

/** One change as it is recorded. */
export interface AuditRecord {
  atUTC: string;
  /**
   * Who: a username (a login token or console session), `token:<name>` (a service token),
   * `cli:<OS user>` (the `vigil` command on the server, in its direct mode), `apiKey:<name>` (a
   * device the key's auto-create rule created, src/tenancy/auto-devices.ts).
   */
  actor: string;
  action: AuditAction;
  /** What: a device, `<device>/<sensor>`, a definition, a user, key, token, channel or route name. */
  target: string;
  /** The record before the change (absent for a creation), secrets masked. */
  before?: unknown;
  /** The record after the change (absent for a deletion), secrets masked. */
  after?: unknown;
  details: Record<string, unknown>;
}

/** An entry as listed: the record with its id, which is also the cursor of the next page. */
export interface AuditEntry extends AuditRecord {
  id: string;
}

export interface AuditFilter {
  actor?: string;
  /** An action (`device.update`), or a resource's actions (`device`). */
  action?: string;
  target?: string;
  /** Epoch ms, inclusive. */
  startMs?: number;
  /** Epoch ms, exclusive. */
  endMs?: number;
  /** Entries older than this id (the `next` of the previous page). */
  before?: string;
  limit: number;
}

export interface AuditPage {
  /** Newest first. */
  entries: AuditEntry[];
  /** The `before` of the next page; null when there is none. */
  next: string | null;
}

export interface AuditLog {
  record(env: string, entry: AuditRecord): Promise<void>;
  /** Entries newest first, filtered; at most `limit`, and a cursor when more may match. */
  list(env: string, filter: AuditFilter): Promise<AuditPage>;
  /** The oldest time kept at `nowMs`, epoch ms: what appending trims to. */
  keepFromMs(nowMs: number): number;
}

/** Entries read per round trip while filtering. */
const SCAN_BATCH = 500;
/** Most entries one listing looks at: a filter that matches rarely answers with a cursor instead. */
const SCAN_LIMIT = 20_000;

export function createAuditLog(deps: { redis: Redis; keys: AuditKeys; retentionMs: number }): AuditLog {
  const { redis, keys, retentionMs } = deps;
  const keepFromMs = (nowMs: number) => Math.max(0, nowMs - retentionMs);
  return {
    keepFromMs,
    async record(env, entry) {
      const nowMs = Date.parse(entry.atUTC);
      const json = JSON.stringify({
        ...entry,
        before: maskSecrets(entry.before),
        after: maskSecrets(entry.after),
      });
      await redis.eval(APPEND, 1, keys.auditLog(env), nowMs, keepFromMs(nowMs), json);
    },
    async list(env, filter) {
      const matches = matcher(filter);
      const oldest = Math.max(filter.startMs ?? 0, keepFromMs(Date.now()));
      let end = filter.before === undefined ? endBound(filter.endMs) : `(${checkId(filter.before)}`;
      const entries: AuditEntry[] = [];
      let looked = 0;
      for (;;) {
        const batch = (await redis.xrevrange(
          keys.auditLog(env),
          end,
          String(oldest),
          'COUNT',
          SCAN_BATCH,
        )) as [string, string[]][];
        for (const [id, fields] of batch) {
          looked++;
          const entry = decodeEntry(id, fields);
          if (entry && matches(entry)) entries.push(entry);
          if (entries.length === filter.limit) return { entries, next: id };
          if (looked >= SCAN_LIMIT) return { entries, next: id };
        }
        if (batch.length < SCAN_BATCH) return { entries, next: null };
        end = `(${batch.at(-1)?.[0] ?? '0'}`;
      }
    },
  };
}

/** The exclusive upper bound of a listing that ends at `endMs` (exclusive), or the newest entry. */
const endBound = (endMs: number | undefined) => (endMs === undefined ? '+' : `(${endMs}-0`);

const ID_PATTERN = /^\d{1,16}-\d{1,16}$/;

function checkId(id: string): string {
  if (!ID_PATTERN.test(id))
    throw new AppError('INVALID_ATTRIBUTE', 'The attribute before must be a cursor of an earlier listing.', {
      details: { attribute: 'before' },
    });
  return id;
}

function decodeEntry(id: string, fields: string[]): AuditEntry | null {
  const json = fields[fields.indexOf('e') + 1];
  if (json === undefined) return null;
  return { id, ...(JSON.parse(json) as AuditRecord) };
}

function matcher(f: AuditFilter): (e: AuditEntry) => boolean {
  return (e) =>
    (f.actor === undefined || e.actor === f.actor) &&
    (f.action === undefined || e.action === f.action || e.action.startsWith(`${f.action}.`)) &&
    (f.target === undefined || e.target === f.target);
}

/**
 * Fields whose values are secrets, wherever they appear in a record. (A channel's URL is recorded as
 * its listing shows it, credentials masked.)
 */
const SECRET_FIELDS = new Set([
  'password',
  'passwordHash',
  'mfaSecret',
  'secret',
  'signingSecret',
  'token',
  'key',
  'apiKey',
  'hash',
]);

/** `value` with every secret field's value replaced by `***`; fields and structure are kept. */
export function maskSecrets(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(maskSecrets);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value))
    out[k] = SECRET_FIELDS.has(k) && v !== null ? '***' : maskSecrets(v);
  return out;
}

/** The actor of the `vigil` command in its direct mode: the OS user running it. */
export function cliActor(): string {
  try {
    return `cli:${userInfo().username}`;
  } catch {
    // No user entry for the process's uid (some containers).
    return 'cli';
  }
}

/** The actor of a request with a bearer token: the user of a login token, or `token:<name>`. */
export const tokenActor = (token: { kind: 'login' | 'cli'; subject: string }): string =>
  token.kind === 'login' ? token.subject : `token:${token.subject}`;
