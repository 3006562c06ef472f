/**
 * The capped per-environment ingestion log (PRODUCT.md §6, §10): what happened to each payload,
 * newest first, in `Keys.ingestLog(env)` (a Redis LIST of JSON entries, trimmed to `size`).
 * Written by the gateway (payloads refused after their environment was known) and the worker.
 */
import type { ChainableCommander } from 'ioredis';
import type { Redis } from '../redis/connect.ts';
import type { Keys } from '../state/keys.ts';
import type { GatewayKind } from '../queue/jobs.ts';

export interface IngestLogEntry {
  /** ISO 8601 UTC with ms: when the gateway received the payload. */
  receivedUTC: string;
  ingestId: string;
  gateway: GatewayKind;
  deviceName: string | null;
  outcome: 'accepted' | 'partial' | 'rejected';
  code: string | null;
  message: string | null;
}

/** An entry with the environment whose log it goes to. */
export interface IngestLogRecord extends IngestLogEntry {
  env: string;
}

export interface IngestLog {
  /** Appends entries (one pipelined LPUSH + LTRIM per environment). */
  record(entries: readonly IngestLogRecord[]): Promise<void>;
  /**
   * Queues the same commands on `commands` (a MULTI), so the entries land together with whatever
   * else it holds: the worker's acknowledgement of the step that produced them.
   */
  appendTo(commands: ChainableCommander, entries: readonly IngestLogRecord[]): void;
  /**
   * appendTo with the entries turned into text now: what is kept until the commands are queued is
   * one string per environment, not thousands of entries (a worker step's wait for InfluxDB is long
   * enough to promote them to V8's old generation).
   */
  prepare(entries: readonly IngestLogRecord[]): (commands: ChainableCommander) => void;
  /** Newest first, at most `limit` (capped at the log size). */
  list(env: string, limit: number): Promise<IngestLogEntry[]>;
}

export function createIngestLog(deps: { redis: Redis; keys: Keys; size: number }): IngestLog {
  const prepare = (entries: readonly IngestLogRecord[]) => {
    const byEnv = new Map<string, IngestLogRecord[]>();
    for (const entry of entries) {
      const list = byEnv.get(entry.env);
      if (list) list.push(entry);
      else byEnv.set(entry.env, [entry]);
    }
    // Only the newest `size` can stay: the older ones of a large step would be trimmed at once.
    // JSON text has no raw newline, so '\n' separates entries.
    const texts = [...byEnv].map(([env, list]) => ({
      key: deps.keys.ingestLog(env),
      text: list.slice(-deps.size).map(entryJson).join('\n'),
    }));
    return (commands: ChainableCommander) => {
      for (const { key, text } of texts)
        commands.lpush(key, ...text.split('\n')).ltrim(key, 0, deps.size - 1);
    };
  };
  const appendTo = (commands: ChainableCommander, entries: readonly IngestLogRecord[]) =>
    prepare(entries)(commands);
  return {
    appendTo,
    prepare,
    async record(entries) {
      if (entries.length === 0) return;
      const pipeline = deps.redis.pipeline();
      appendTo(pipeline, entries);
      const results = await pipeline.exec();
      const failed = results?.find(([err]) => err !== null);
      if (failed) throw failed[0] ?? new Error('ingest log write failed');
    },
    async list(env, limit) {
      const n = Math.max(0, Math.min(limit, deps.size));
      if (n === 0) return [];
      const lines = await deps.redis.lrange(deps.keys.ingestLog(env), 0, n - 1);
      return lines.map((line) => JSON.parse(line) as IngestLogEntry);
    },
  };
}

/** An entry as stored: its fields without `env`, in IngestLogEntry's order. */
function entryJson(e: IngestLogRecord): string {
  // A literal of fixed shape, not a rest spread: this runs for every payload a worker processes.
  return JSON.stringify({
    receivedUTC: e.receivedUTC,
    ingestId: e.ingestId,
    gateway: e.gateway,
    deviceName: e.deviceName,
    outcome: e.outcome,
    code: e.code,
    message: e.message,
  });
}
