/**
 * Each device's recent payloads, for the console (a device's page, the parser workbench's replay):
 * what the device's parser received, with the outcome of its submission and the status each data
 * point got from it. A Redis LIST per device, newest first, bounded in count
 * (VIGIL_DEVICE_RECENT_PAYLOADS) and in bytes: every entry is at most RECENT_PAYLOADS_MAX_BYTES /
 * count, its payload shortened (and marked so) to fit. Written by the command that acknowledges the
 * worker's step — one LPUSH and one LTRIM per device and step, not per payload — so an entry is
 * there exactly when the step's ingestion-log entries are.
 */
import type { IngestItem } from '../domain/ingest-item.ts';
import type { Status } from '../domain/types.ts';
import type { IngestLogRecord } from '../ingest/ingest-log.ts';
import type { Redis } from '../redis/connect.ts';
import type { RedisCommand } from '../redis/command.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import type { ConvertedDevice } from './convert.ts';
import type { ResolvedReading } from './resolve.ts';

/** Bytes kept per device, all entries together. */
export const RECENT_PAYLOADS_MAX_BYTES = 64 * 1024;

export interface RecentPayloadKeys {
  readonly prefix: string;
  /** List of a device's recent payloads, newest first (JSON, see StoredEntry). */
  recentPayloads(env: string, device: string): string;
}

export function recentPayloadKeys(prefix: string): RecentPayloadKeys {
  // The device's hash tag, as its tenancy and state keys have it.
  return { prefix, recentPayloads: (env, d) => `${prefix}:dev:{${env}/${d}}:recent-payloads` };
}

/** A recent payload as the console reads it. */
export interface RecentPayload {
  /** Epoch ms when the gateway received the submission. */
  receivedMs: number;
  ingestId: string;
  outcome: IngestLogRecord['outcome'];
  code: string | null;
  message: string | null;
  /** What the definition's parser received (payloadStr), shortened when `payloadBytes` is set. */
  payload: string;
  /** The submission's body (payloadRaw), when a pre-parser made `payload` out of it. */
  raw?: string;
  /** The body was not UTF-8: `raw` (or `payload`) is its hex. */
  hex?: true;
  /** Set when the payload was shortened: its full length in UTF-8 bytes. */
  payloadBytes?: number;
  /** Set when `raw` was shortened: its full length in UTF-8 bytes. */
  rawBytes?: number;
  /** The status each data point's value got (without the previous status: no hysteresis). */
  statuses: Record<string, Status>;
}

/** The stored form: short keys, absent fields left out. */
interface StoredEntry {
  t: number;
  i: string;
  o: RecentPayload['outcome'];
  c?: string;
  m?: string;
  p: string;
  r?: string;
  h?: 1;
  pb?: number;
  rb?: number;
  s?: Record<string, Status>;
}

/** Bytes of `,"r":"","pb":…,"rb":…` at most. */
const SIZE_FIELDS_BYTES = 48;
/** Longest message kept, in characters (a parser's error with its location fits). */
const MESSAGE_CHARS = 300;

/**
 * The commands that keep the recent payloads of the step's devices: the newest `count` readings of
 * each device, with the outcome of their submission (`entries`, the step's ingestion-log records)
 * and the statuses `converted` gave their values. Readings whose device has no definition parser
 * (preparseronly) are kept too: their payload is what the pre-parser made.
 */
export function recentPayloadCommands(
  keys: RecentPayloadKeys,
  count: number,
  resolved: readonly ResolvedReading[],
  converted: readonly ConvertedDevice[],
  entries: readonly IngestLogRecord[],
): RedisCommand[] {
  if (count <= 0 || resolved.length === 0) return [];
  const kept = new Map<DeviceRecord, ResolvedReading[]>();
  for (const r of resolved) {
    const list = kept.get(r.device);
    if (!list) kept.set(r.device, [r]);
    else {
      list.push(r);
      if (list.length > count) list.shift();
    }
  }
  const statuses = statusesOf(kept, converted);
  const outcomeOf = new Map<string, IngestLogRecord>(entries.map((e) => [e.ingestId, e]));
  const maxBytes = Math.floor(RECENT_PAYLOADS_MAX_BYTES / count);
  const commands: RedisCommand[] = [];
  for (const [device, readings] of kept) {
    const key = keys.recentPayloads(readings[0]!.item.env, device.deviceName);
    // LPUSH puts the last argument first: the newest reading ends up at the head.
    const texts = readings.map((r) =>
      storedText(r, outcomeOf.get(r.item.id), statuses.get(r), maxBytes),
    );
    commands.push(['LPUSH', key, ...texts], ['LTRIM', key, 0, count - 1]);
  }
  return commands;
}

/** The statuses of the values of the readings that are kept, by reading. */
function statusesOf(
  kept: ReadonlyMap<DeviceRecord, readonly ResolvedReading[]>,
  converted: readonly ConvertedDevice[],
): Map<ResolvedReading, Record<string, Status>> {
  const wanted = new Set<ResolvedReading>();
  for (const list of kept.values()) for (const r of list) wanted.add(r);
  const out = new Map<ResolvedReading, Record<string, Status>>();
  for (const device of converted) {
    for (const v of device.values) {
      if (!wanted.has(v.reading)) continue;
      let s = out.get(v.reading);
      if (!s) {
        // No prototype: a data point may be named `__proto__`.
        s = Object.create(null) as Record<string, Status>;
        out.set(v.reading, s);
      }
      s[v.sensor] = v.status;
    }
  }
  return out;
}

function storedText(
  r: ResolvedReading,
  outcome: IngestLogRecord | undefined,
  statuses: Record<string, Status> | undefined,
  maxBytes: number,
): string {
  const item: IngestItem = r.item;
  const entry: StoredEntry = { t: item.receivedMs, i: item.id, o: outcome?.outcome ?? 'accepted', p: '' };
  if (outcome?.code) entry.c = outcome.code;
  if (outcome?.message) entry.m = clipChars(outcome.message, MESSAGE_CHARS);
  if (item.bodyIsHex) entry.h = 1;
  if (statuses) entry.s = statuses;
  const raw = item.body === r.payloadStr ? undefined : item.body;
  // Most entries fit whole: one JSON text, measured only when it might not fit (a UTF-16 unit is at
  // most 3 bytes of UTF-8).
  entry.p = r.payloadStr;
  if (raw !== undefined) entry.r = raw;
  const whole = JSON.stringify(entry);
  if (whole.length * 3 <= maxBytes || Buffer.byteLength(whole) <= maxBytes) return whole;
  entry.p = '';
  delete entry.r;
  // What the entry holds besides the texts, with room for the keys `r`, `pb` and `rb`.
  const overhead = (e: StoredEntry) => Buffer.byteLength(JSON.stringify(e)) + SIZE_FIELDS_BYTES;
  if (maxBytes - overhead(entry) < 0 && entry.s) {
    // A definition with very many data points: the statuses go, the payload stays.
    delete entry.s;
  }
  const room = maxBytes - overhead(entry);
  // With a raw body beside it, the payload the parser received gets half the room.
  const payload = fitted(r.payloadStr, raw === undefined ? room : Math.floor(room / 2));
  entry.p = payload.text;
  if (payload.fullBytes !== undefined) entry.pb = payload.fullBytes;
  if (raw !== undefined) {
    const fit = fitted(raw, maxBytes - overhead(entry));
    entry.r = fit.text;
    if (fit.fullBytes !== undefined) entry.rb = fit.fullBytes;
  }
  return JSON.stringify(entry);
}

/**
 * `text` as it fits in `room` bytes of JSON: whole, or its longest prefix that does (never half a
 * character), with its full size in UTF-8 bytes.
 */
function fitted(text: string, room: number): { text: string; fullBytes?: number } {
  const jsonBytes = (s: string) => Buffer.byteLength(JSON.stringify(s)) - 2;
  if (jsonBytes(text) <= room) return { text };
  const fullBytes = Buffer.byteLength(text);
  if (room <= 0) return { text: '', fullBytes };
  // Escapes only make JSON longer than the text: start from `room` characters and shrink.
  let end = Math.min(text.length, room);
  let cut = text.slice(0, end).toWellFormed();
  while (end > 0 && jsonBytes(cut) > room) {
    end = Math.floor(end * 0.9);
    cut = text.slice(0, end).toWellFormed();
  }
  return { text: cut, fullBytes };
}

function clipChars(text: string, chars: number): string {
  return text.length > chars ? `${text.slice(0, chars)}…` : text;
}

/** A stored entry as served; null for one that is not (written by another version). */
export function readRecentPayload(text: string): RecentPayload | null {
  let e: StoredEntry;
  try {
    e = JSON.parse(text) as StoredEntry;
  } catch {
    return null;
  }
  if (typeof e !== 'object' || e === null || typeof e.p !== 'string') return null;
  const out: RecentPayload = {
    receivedMs: Number(e.t),
    ingestId: String(e.i),
    outcome: e.o,
    code: e.c ?? null,
    message: e.m ?? null,
    payload: e.p,
    statuses: e.s ?? {},
  };
  if (e.r !== undefined) out.raw = e.r;
  if (e.h === 1) out.hex = true;
  if (e.pb !== undefined) out.payloadBytes = e.pb;
  if (e.rb !== undefined) out.rawBytes = e.rb;
  return out;
}

/** A device's recent payloads, newest first. */
export async function listRecentPayloads(
  redis: Redis,
  keys: RecentPayloadKeys,
  env: string,
  device: string,
  limit = 256,
): Promise<RecentPayload[]> {
  const texts = await redis.lrange(keys.recentPayloads(env, device), 0, limit - 1);
  return texts.map(readRecentPayload).filter((p): p is RecentPayload => p !== null);
}
