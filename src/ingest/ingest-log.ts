/**
 * The capped per-environment ingestion log (docs/interface.md#ingestion-log-entry): what happened to each payload,
 * newest first, in `IngestKeys.ingestLog(env)` (a Redis LIST, trimmed to `size`). Written by the gateway
 * (payloads refused after their environment was known) and the worker.
 *
 * An entry is stored as JSON, except a plain acceptance (no code, no message), which is almost
 * every entry under load: it is `A<tab>receivedMs<tab>ingestId<tab>gateway<tab>deviceName`, a
 * third of the JSON's size and written without JSON (the worker writes one per payload).
 */
import { isoUtc } from '../domain/time.ts';
import type { Redis } from '../redis/connect.ts';
import { queueCommands, type RedisCommand } from '../redis/command.ts';
import type { IngestKeys } from './ingest-keys.ts';
import type { IngestGateway } from '../domain/ingest-item.ts';

export interface IngestLogEntry {
  /** ISO 8601 UTC with ms: when the gateway received the payload. */
  receivedUTC: string;
  ingestId: string;
  gateway: IngestGateway;
  deviceName: string | null;
  /** `ignored`: a network server's message that is not data (a join, a downlink event…). */
  outcome: 'accepted' | 'partial' | 'rejected' | 'ignored';
  code: string | null;
  message: string | null;
  /**
   * The version of the device's definition that parsed the payload; null when none did (an
   * unknown device, a payload refused before, or an entry written before versions existed).
   */
  definitionVersion: number | null;
}

/** An entry to write: with the environment whose log it goes to, and its receive time in ms. */
export interface IngestLogRecord extends Omit<IngestLogEntry, 'receivedUTC' | 'definitionVersion'> {
  /** Absent: none (what the gateway logs, before any parser ran). */
  definitionVersion?: number | null;
  env: string;
  /** Epoch ms when the gateway received the payload. */
  receivedMs: number;
}

export interface IngestLog {
  /** Appends entries (one pipelined LPUSH + LTRIM per environment). */
  record(entries: readonly IngestLogRecord[]): Promise<void>;
  /**
   * The commands that append the entries (an LPUSH and an LTRIM per environment), for whoever must
   * run them together with something else: the worker's acknowledgement of the step that produced
   * them. The entries are turned into text now: what is kept until then is one string per
   * environment, not thousands of entries (a worker step's wait for InfluxDB is long enough to
   * promote them to V8's old generation).
   */
  commands(entries: readonly IngestLogRecord[]): RedisCommand[];
  /** Newest first, at most `limit` (capped at the log size). */
  list(env: string, limit: number): Promise<IngestLogEntry[]>;
}

export function createIngestLog(deps: { redis: Redis; keys: IngestKeys; size: number }): IngestLog {
  const commands = (entries: readonly IngestLogRecord[]): RedisCommand[] => {
    const byEnv = new Map<string, IngestLogRecord[]>();
    for (const entry of entries) {
      const list = byEnv.get(entry.env);
      if (list) list.push(entry);
      else byEnv.set(entry.env, [entry]);
    }
    // Only the newest `size` can stay: the older ones of a large step would be trimmed at once.
    // No stored entry has a raw newline (JSON escapes it; a plain acceptance names a real device),
    // so '\n' separates entries.
    const texts = [...byEnv].map(([env, list]) => ({
      key: deps.keys.ingestLog(env),
      text: list.slice(-deps.size).map(storedEntry).join('\n'),
    }));
    return texts.flatMap(({ key, text }): RedisCommand[] => [
      ['LPUSH', key, ...text.split('\n')],
      ['LTRIM', key, 0, deps.size - 1],
    ]);
  };
  return {
    commands,
    async record(entries) {
      if (entries.length === 0) return;
      const pipeline = deps.redis.pipeline();
      queueCommands(pipeline, commands(entries));
      const results = await pipeline.exec();
      const failed = results?.find(([err]) => err !== null);
      if (failed) throw failed[0] ?? new Error('ingest log write failed');
    },
    async list(env, limit) {
      const n = Math.max(0, Math.min(limit, deps.size));
      if (n === 0) return [];
      const lines = await deps.redis.lrange(deps.keys.ingestLog(env), 0, n - 1);
      return lines.map(readEntry);
    },
  };
}

/** The cursor that starts a page after `e`: its ingest id and device. */
export const cursorOf = (e: IngestLogEntry): string => `${e.ingestId}/${e.deviceName ?? ''}`;

/** One page of a list of entries, newest first (`pageAfter`). */
export interface IngestLogPage {
  entries: IngestLogEntry[];
  /** Position of the page's first entry in the list (0: the newest). */
  offset: number;
  /** Cursor of the next, older page; undefined on the last. */
  older: string | undefined;
  /** The cursor's entry is not in the list (the log keeps the newest `size`): nothing to show after it. */
  gone: boolean;
}

/**
 * At most `limit` of `entries` (newest first, as `list` answers, filtered or not) after the entry
 * the cursor `after` names (`cursorOf`), from the newest without one. A cursor names an entry, not a
 * position: entries that arrive meanwhile do not shift the older pages. The console's ingestion
 * page and `vigil ingest log` page with it.
 */
export function pageAfter(
  entries: readonly IngestLogEntry[],
  after: string | undefined,
  limit: number,
): IngestLogPage {
  const at = after === undefined ? -1 : entries.findIndex((e) => cursorOf(e) === after);
  const gone = after !== undefined && at < 0;
  const offset = gone ? entries.length : at + 1;
  const page = entries.slice(offset, offset + limit);
  const last = page.at(-1);
  return {
    entries: page,
    offset,
    older: last && offset + page.length < entries.length ? cursorOf(last) : undefined,
    gone,
  };
}

/** An entry as stored (see the file's comment). */
function storedEntry(e: IngestLogRecord): string {
  const name = e.deviceName;
  if (
    e.outcome === 'accepted' &&
    e.code === null &&
    e.message === null &&
    name !== null &&
    !/[\t\n]/.test(name)
  ) {
    return `V\t${e.receivedMs}\t${e.ingestId}\t${e.gateway}\t${e.definitionVersion ?? ''}\t${name}`;
  }
  // A literal of fixed shape, in IngestLogEntry's order, not a copy without `env`.
  return JSON.stringify({
    receivedUTC: isoUtc(e.receivedMs) ?? '',
    ingestId: e.ingestId,
    gateway: e.gateway,
    deviceName: name,
    outcome: e.outcome,
    code: e.code,
    message: e.message,
    definitionVersion: e.definitionVersion ?? null,
  });
}

/** A stored entry as served (JSON as written, or a plain acceptance). */
export function readEntry(line: string): IngestLogEntry {
  // `A`: a plain acceptance written before definitions had versions, as `V` without the version.
  const plain = line.startsWith('V\t') ? 'V' : line.startsWith('A\t') ? 'A' : null;
  if (plain === null)
    return { definitionVersion: null, ...(JSON.parse(line) as Omit<IngestLogEntry, 'definitionVersion'>) };
  const [, ms, ingestId, gateway, ...rest] = line.split('\t');
  const version = plain === 'V' ? rest.shift() : '';
  return {
    receivedUTC: isoUtc(Number(ms)) ?? '',
    ingestId: ingestId ?? '',
    gateway: gateway as IngestGateway,
    deviceName: rest.join('\t'),
    outcome: 'accepted',
    code: null,
    message: null,
    definitionVersion: version ? Number(version) : null,
  };
}
