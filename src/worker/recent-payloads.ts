/**
 * Each device's recent payloads, for the console (a device's page, the parser workbench's replay):
 * what the device's parser received, with the outcome of its submission and the status each data
 * point got from it. A Redis LIST per device, newest first, bounded in count
 * (VIGIL_DEVICE_RECENT_PAYLOADS) and in bytes: every entry is at most RECENT_PAYLOADS_MAX_BYTES /
 * count, its payload shortened (and marked so) to fit.
 *
 * They are a copy for people to look at, not data: the worker keeps the entries of its
 * acknowledged steps in memory, the newest `count` per device, and writes them every
 * RECENT_PAYLOADS_FLUSH_MS — one LPUSH and one LTRIM per device and write, however many steps and
 * payloads it gathered. Kept only after the acknowledgement, a payload processed again (its step
 * was not acknowledged) is kept once; a write that failed is tried again with the next one, and
 * one whose reply a dropped connection lost may be there twice, which reading leaves out. A worker
 * killed loses the entries of its last second (the payloads themselves are processed, in state and
 * history). Written by the acknowledging script, every payload had cost the worker and Redis about
 * a tenth of the end-to-end rate; gathered, a device sending several payloads a second costs a
 * command pair per write. Every second rather than every quarter: the bench's devices send ~5
 * payloads a second, and per device and write Redis spends about what it spends per entry.
 */
import type { IngestItem } from '../domain/ingest-item.ts';
import { STATUSES, type Status } from '../domain/types.ts';
import { ingestIdHasTime, ingestIdTimeMs } from '../ingest/ingest-id.ts';
import type { IngestLogRecord } from '../ingest/ingest-log.ts';
import { sampledWarning, type Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import type { ConvertedDevice } from './convert.ts';
import type { ResolvedReading } from './resolve.ts';

/** Bytes kept per device, all entries together. */
export const RECENT_PAYLOADS_MAX_BYTES = 64 * 1024;

export interface RecentPayloadKeys {
  readonly prefix: string;
  /** List of a device's recent payloads, newest first (JSON, see StoredEntry). */
  recentPayloads(env: string, device: string): string;
  /**
   * Counter of an environment, raised by every write that kept payloads of it: the console's live
   * pages watch it, as the payloads come a moment after the rest of their step.
   */
  recentPayloadsWritten(env: string): string;
}

export function recentPayloadKeys(prefix: string): RecentPayloadKeys {
  // The device's hash tag, as its tenancy and state keys have it.
  return {
    prefix,
    recentPayloads: (env, d) => `${prefix}:dev:{${env}/${d}}:recent-payloads`,
    recentPayloadsWritten: (env) => `${prefix}:env:${env}:recent-payloads-written`,
  };
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

/**
 * The stored form: a line of JSON with short keys (absent fields left out), a newline, then the
 * payload's text as it is and, when there is one, the raw body right after it (`pn`: where the
 * payload ends, in UTF-16 units). The texts go unescaped — they are most of an entry, and escaping
 * them cost the worker more than the rest of keeping them; JSON never holds a raw newline, so the
 * first one ends the header. Every byte of an entry costs the worker and Redis twice (sent, then
 * copied by the script), so the header says only what cannot be told otherwise: the receive time
 * `t` only when the ingest id does not hold it, the outcome `o` only when not 'accepted', and the
 * statuses as a flat list of names and indexes into STATUSES.
 */
interface StoredHeader {
  t?: number;
  i: string;
  o?: RecentPayload['outcome'];
  c?: string;
  m?: string;
  pn?: number;
  h?: 1;
  pb?: number;
  rb?: number;
  s?: (string | number)[];
}

/** The form of entries written before the header line (one JSON text, statuses as an object). */
interface JsonEntry extends Omit<StoredHeader, 't' | 'o' | 's' | 'pn'> {
  t: number;
  o: RecentPayload['outcome'];
  p: string;
  r?: string;
  s?: Record<string, Status>;
}

/** Most characters of a message kept (a parser's error with its location fits). */
const MESSAGE_CHARS = 300;
/** Bytes of `,"pn":…,"pb":…,"rb":…` at most. */
const SIZE_FIELDS_BYTES = 48;

/** How often a worker writes the recent payloads it gathered, in ms (the console's delay). */
export const RECENT_PAYLOADS_FLUSH_MS = 1000;
/**
 * Gathered entries (UTF-16 units) above which they are written at once, before the next flush;
 * what a failed write had is kept for the next one only while it stays under this.
 */
const GATHERED_MAX_UNITS = 8 * 1024 * 1024;
/** Entries (UTF-16 units) written by one script call at most: each call holds Redis for its time. */
const WRITE_MAX_UNITS = 1024 * 1024;

/** Entries to keep of one device: oldest first, at most `count`. */
export interface KeptDevice {
  env: string;
  device: string;
  texts: string[];
}

/** Entries to keep, by the list key of their device. */
export type KeptPayloads = Map<string, KeptDevice>;

/**
 * The entries that keep the recent payloads of a step's devices: the newest `count` readings of
 * each device, with the outcome of their submission (`entries`, the step's ingestion-log records)
 * and the statuses `converted` gave their values. Readings whose device has no definition parser
 * (preparseronly) are kept too: their payload is what the pre-parser made.
 */
export function recentPayloadEntries(
  keys: RecentPayloadKeys,
  count: number,
  resolved: readonly ResolvedReading[],
  converted: readonly ConvertedDevice[],
  entries: readonly IngestLogRecord[],
): KeptPayloads {
  const out: KeptPayloads = new Map();
  if (count <= 0 || resolved.length === 0) return out;
  const kept = new Map<DeviceRecord, ResolvedReading[]>();
  for (const r of resolved) {
    const list = kept.get(r.device);
    if (!list) kept.set(r.device, [r]);
    else {
      list.push(r);
      if (list.length > count) list.shift();
    }
  }
  const statuses = statusesOf(converted);
  const outcomeOf = new Map<string, IngestLogRecord>(entries.map((e) => [e.ingestId, e]));
  const maxBytes = Math.floor(RECENT_PAYLOADS_MAX_BYTES / count);
  for (const [device, readings] of kept) {
    const env = readings[0]!.item.env;
    out.set(keys.recentPayloads(env, device.deviceName), {
      env,
      device: device.deviceName,
      texts: readings.map((r) => storedText(r, outcomeOf.get(r.item.id), statuses.get(r), maxBytes)),
    });
  }
  return out;
}

/**
 * ARGV: the count kept, then per environment its written counter, its devices set and m, then m
 * devices, each its name, list key, n and its n new entries oldest first (LPUSH puts the last
 * argument first: the newest ends up at the head). A device deleted since its step (no longer in
 * the set) gets nothing, and an environment's counter rises only when one of its devices got
 * entries, so a deletion is not undone. A key that is not a list (written by hand) is passed over,
 * not the end of the rest: answers how many were.
 */
const KEEP_LUA = `
local keep = tonumber(ARGV[1])
local refused = 0
local i = 2
while i <= #ARGV do
  local written, devices, m = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  i = i + 3
  local any = false
  for _ = 1, m do
    local device, key, n = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
    if redis.call('ZSCORE', devices, device) then
      local pushed = redis.pcall('LPUSH', key, unpack(ARGV, i + 3, i + 2 + n))
      if type(pushed) == 'table' and pushed.err then
        refused = refused + 1
      else
        redis.call('LTRIM', key, 0, keep - 1)
        any = true
      end
    end
    i = i + 3 + n
  end
  if any then redis.call('INCR', written) end
end
return refused`;

type KeepRedis = Redis & {
  vigilKeepRecent(numberOfKeys: number, ...args: (string | number)[]): Promise<number>;
};

/** Gathers the recent payloads of a worker's acknowledged steps and writes them (module comment). */
export interface RecentPayloadWriter {
  /** Keeps the entries of a step whose acknowledgement landed. */
  add(kept: KeptPayloads): void;
  /** Writes what was gathered until now (after the write under way, if there is one). */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left. */
  close(): Promise<void>;
}

export function startRecentPayloadWriter(o: {
  redis: Redis;
  keys: RecentPayloadKeys & Pick<TenancyKeys, 'devices'>;
  count: number;
  log: Logger;
  flushMs?: number;
  maxGatheredUnits?: number;
}): RecentPayloadWriter {
  const maxUnits = o.maxGatheredUnits ?? GATHERED_MAX_UNITS;
  const redis = o.redis as KeepRedis;
  if (typeof redis.vigilKeepRecent !== 'function') redis.defineCommand('vigilKeepRecent', { lua: KEEP_LUA });
  const failed = sampledWarning(o.log, 'writing recent payloads failed; they are written with the next ones');
  const notList = sampledWarning(
    o.log,
    "a device's recent payloads key holds no list: its payloads are not kept",
  );
  let gathered: KeptPayloads = new Map();
  let units = 0;
  let writing: Promise<void> | undefined;

  /** Adds `kept`'s texts after what `into` holds for `key`, the newest `count` kept; answers the units added. */
  const append = (into: KeptPayloads, key: string, kept: KeptDevice): number => {
    let device = into.get(key);
    if (!device) into.set(key, (device = { env: kept.env, device: kept.device, texts: [] }));
    const list = device.texts;
    let added = 0;
    for (const t of kept.texts) {
      list.push(t);
      added += t.length;
    }
    if (list.length > o.count) for (const t of list.splice(0, list.length - o.count)) added -= t.length;
    return added;
  };

  /** Writes `batch`: answers how many of its keys were not lists. */
  async function write(batch: KeptPayloads): Promise<number> {
    const byEnv = new Map<string, [string, KeptDevice][]>();
    for (const entry of batch) {
      const list = byEnv.get(entry[1].env);
      if (list) list.push(entry);
      else byEnv.set(entry[1].env, [entry]);
    }
    let refused = 0;
    let args: (string | number)[] = [o.count];
    let size = 0;
    const call = async () => {
      refused += await redis.vigilKeepRecent(0, ...args);
      args = [o.count];
      size = 0;
    };
    for (const [env, devices] of byEnv) {
      let group: (string | number)[] = [];
      let count = 0;
      const close = () => {
        if (count > 0) args.push(o.keys.recentPayloadsWritten(env), o.keys.devices(env), count, ...group);
        group = [];
        count = 0;
      };
      for (const [key, { device, texts }] of devices) {
        group.push(device, key, texts.length, ...texts);
        count += 1;
        for (const t of texts) size += t.length;
        if (size >= WRITE_MAX_UNITS) {
          close();
          await call();
        }
      }
      close();
    }
    if (args.length > 1) await call();
    return refused;
  }

  async function writeGathered(): Promise<void> {
    const batch = gathered;
    gathered = new Map();
    units = 0;
    try {
      const refused = await write(batch);
      if (refused > 0) notList({ devices: refused });
    } catch (err) {
      // Kept for the next write, before what came meanwhile (at most `count` entries per device),
      // unless that holds too much: while Redis is down no step is acknowledged, so little comes.
      const merged: KeptPayloads = new Map();
      let mergedUnits = 0;
      for (const [key, kept] of batch) mergedUnits += append(merged, key, kept);
      for (const [key, kept] of gathered) mergedUnits += append(merged, key, kept);
      if (mergedUnits <= maxUnits) {
        gathered = merged;
        units = mergedUnits;
        failed({ devices: batch.size, err });
      } else {
        o.log.error(
          { devices: batch.size, err },
          'writing recent payloads failed; too many to keep for the next write: they are lost',
        );
      }
    }
  }

  /** Writes what was gathered, after the write under way if there is one. */
  async function flush(): Promise<void> {
    while (writing) await writing;
    if (gathered.size === 0) return;
    writing = writeGathered().finally(() => (writing = undefined));
    await writing;
  }

  const timer = setInterval(() => {
    if (gathered.size > 0 && !writing) void flush();
  }, o.flushMs ?? RECENT_PAYLOADS_FLUSH_MS);
  timer.unref();

  return {
    add(kept) {
      for (const [key, device] of kept) units += append(gathered, key, device);
      if (units >= maxUnits) void flush();
    },
    flush,
    async close() {
      clearInterval(timer);
      await flush();
      if (gathered.size > 0)
        o.log.error(
          { devices: gathered.size },
          'the last recent payloads could not be written: lost at stop',
        );
    },
  };
}

/** A status's index in STATUSES, as entries store it. */
const STATUS_INDEX = Object.fromEntries(STATUSES.map((s, i) => [s, i])) as Record<Status, number>;

/**
 * The statuses of the values of the step's readings, by reading: names and status indexes in turn
 * (of every reading: nearly all of them are kept, and asking which costs more than it saves).
 */
function statusesOf(converted: readonly ConvertedDevice[]): Map<ResolvedReading, (string | number)[]> {
  const out = new Map<ResolvedReading, (string | number)[]>();
  for (const device of converted) {
    for (const v of device.values) {
      const s = out.get(v.reading);
      if (s) s.push(v.sensor, STATUS_INDEX[v.status]);
      else out.set(v.reading, [v.sensor, STATUS_INDEX[v.status]]);
    }
  }
  return out;
}

function storedText(
  r: ResolvedReading,
  outcome: IngestLogRecord | undefined,
  statuses: (string | number)[] | undefined,
  maxBytes: number,
): string {
  const item: IngestItem = r.item;
  const header: StoredHeader = { i: item.id };
  if (!ingestIdHasTime(item.id, item.receivedMs)) header.t = item.receivedMs;
  if (outcome && outcome.outcome !== 'accepted') header.o = outcome.outcome;
  if (outcome?.code) header.c = outcome.code;
  if (outcome?.message) header.m = clipChars(outcome.message, MESSAGE_CHARS);
  if (item.bodyIsHex) header.h = 1;
  if (statuses) header.s = statuses;
  const payload = r.payloadStr;
  const raw = item.body === payload ? undefined : item.body;
  if (raw !== undefined) header.pn = payload.length;
  const whole = `${JSON.stringify(header)}\n${payload}${raw ?? ''}`;
  // Most entries fit whole, measured only when they might not (a UTF-16 unit is at most 3 bytes of
  // UTF-8).
  if (whole.length * 3 <= maxBytes || Buffer.byteLength(whole) <= maxBytes) return whole;
  const bytes = (text: string) => Buffer.byteLength(text);
  // What the entry holds besides the texts, with room for `pn`, `pb` and `rb`.
  const overhead = (h: StoredHeader) => bytes(JSON.stringify(h)) + 1 + SIZE_FIELDS_BYTES;
  if (maxBytes - overhead(header) < 0 && header.s) {
    // A definition with very many data points: the statuses go, the payload stays.
    delete header.s;
  }
  const room = maxBytes - overhead(header);
  // With a raw body beside it, the payload the parser received gets half the room.
  const p = fitted(payload, raw === undefined ? room : Math.floor(room / 2));
  if (p.fullBytes !== undefined) header.pb = p.fullBytes;
  if (raw === undefined) return `${JSON.stringify(header)}\n${p.text}`;
  const rest = fitted(raw, room - bytes(p.text));
  header.pn = p.text.length;
  if (rest.fullBytes !== undefined) header.rb = rest.fullBytes;
  return `${JSON.stringify(header)}\n${p.text}${rest.text}`;
}

/**
 * `text` as it fits in `room` bytes of UTF-8: whole, or its longest prefix that does (never half a
 * character), with its full size in bytes.
 */
function fitted(text: string, room: number): { text: string; fullBytes?: number } {
  const fullBytes = Buffer.byteLength(text);
  if (fullBytes <= room) return { text };
  if (room <= 0) return { text: '', fullBytes };
  // A character is 1–4 bytes of UTF-8 (a surrogate pair 4 for 2 units): start from `room` units and
  // shrink, never ending between the two units of a pair.
  const prefix = (units: number) => {
    const high = text.charCodeAt(units - 1);
    return text.slice(0, high >= 0xd800 && high <= 0xdbff ? units - 1 : units);
  };
  let end = Math.min(text.length, room);
  let cut = prefix(end);
  while (end > 0 && Buffer.byteLength(cut) > room) {
    end = Math.floor(end * 0.9);
    cut = prefix(end);
  }
  return { text: cut, fullBytes };
}

function clipChars(text: string, chars: number): string {
  return text.length > chars ? `${text.slice(0, chars)}…` : text;
}

/** Statuses by data point (no prototype: a data point may be named `__proto__`). */
function statusRecord(s: (string | number)[] | Record<string, Status> | undefined): Record<string, Status> {
  const out = Object.create(null) as Record<string, Status>;
  if (Array.isArray(s))
    for (let i = 0; i + 1 < s.length; i += 2) {
      const status = s[i + 1]!;
      out[String(s[i])] = typeof status === 'number' ? STATUSES[status]! : (status as Status);
    }
  else if (s && typeof s === 'object') Object.assign(out, s);
  return out;
}

/** A stored entry as served; null for one that is not (written by another version). */
export function readRecentPayload(text: string): RecentPayload | null {
  const newline = text.indexOf('\n');
  let header: StoredHeader | JsonEntry;
  let payload: string;
  let raw: string | undefined;
  try {
    header = JSON.parse(newline < 0 ? text : text.slice(0, newline)) as StoredHeader | JsonEntry;
  } catch {
    return null;
  }
  if (typeof header !== 'object' || header === null) return null;
  if (newline < 0) {
    // Written before the header line: one JSON text.
    const e = header as JsonEntry;
    if (typeof e.p !== 'string') return null;
    payload = e.p;
    raw = e.r;
  } else {
    const body = text.slice(newline + 1);
    const pn = (header as StoredHeader).pn;
    payload = pn === undefined ? body : body.slice(0, pn);
    raw = pn === undefined ? undefined : body.slice(pn);
  }
  const ingestId = String(header.i);
  const out: RecentPayload = {
    receivedMs: header.t === undefined ? (ingestIdTimeMs(ingestId) ?? Number.NaN) : Number(header.t),
    ingestId,
    outcome: header.o ?? 'accepted',
    code: header.c ?? null,
    message: header.m ?? null,
    payload,
    statuses: statusRecord(header.s),
  };
  if (raw !== undefined) out.raw = raw;
  if (header.h === 1) out.hex = true;
  if (header.pb !== undefined) out.payloadBytes = header.pb;
  if (header.rb !== undefined) out.rawBytes = header.rb;
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
  // A write whose reply a dropped connection lost is written again: its entries show once.
  const seen = new Set<string>();
  const out: RecentPayload[] = [];
  for (const text of texts) {
    const p = readRecentPayload(text);
    if (p && !seen.has(p.ingestId)) {
      seen.add(p.ingestId);
      out.push(p);
    }
  }
  return out;
}
