/**
 * A recent payload as stored in its device's list: a line of JSON with short keys (absent fields
 * left out), a newline, then the payload's text as it is and, when there is one, the raw body right
 * after it (`pn`: where the payload ends, in UTF-16 units). The texts go unescaped — they are most
 * of an entry, and escaping them cost the worker more than the rest of keeping them; JSON never
 * holds a raw newline, so the first one ends the header. Every byte of an entry costs the worker and
 * Redis twice (sent, then copied by the script), so the header says only what cannot be told
 * otherwise: the receive time `t` only when the ingest id does not hold it, the outcome `o` only
 * when not 'accepted', and the statuses as a flat list of names and indexes into STATUSES.
 *
 * Every entry is at most RECENT_PAYLOADS_MAX_BYTES / count, its payload shortened (and marked so)
 * to fit. A text in any other form (an older Vigil kept entries as one JSON text) reads as none:
 * the list is a short-lived copy, replaced within `count` payloads of its device.
 */
import type { IngestItem } from '../domain/ingest-item.ts';
import { STATUSES, type Status } from '../domain/types.ts';
import { ingestIdHasTime, ingestIdTimeMs } from '../ingest/ingest-id.ts';
import type { IngestLogRecord } from '../ingest/ingest-log.ts';

/** Bytes kept per device, all entries together. */
export const RECENT_PAYLOADS_MAX_BYTES = 64 * 1024;

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

/** Data point names and indexes into STATUSES in turn, as entries store statuses. */
export type StatusList = (string | number)[];

/** A status's index in STATUSES, as entries store it. */
export const STATUS_INDEX = Object.fromEntries(STATUSES.map((s, i) => [s, i])) as Record<Status, number>;

/** What an entry is made of. */
export interface RecentPayloadSource {
  item: IngestItem;
  /** What the definition's parser received. */
  payload: string;
  /** The submission's ingestion-log record, when there is one. */
  outcome: IngestLogRecord | undefined;
  statuses: StatusList | undefined;
}

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
  s?: StatusList;
}

/** Most characters of a message kept (a parser's error with its location fits). */
const MESSAGE_CHARS = 300;
/** Bytes of `,"pn":…,"pb":…,"rb":…` at most. */
const SIZE_FIELDS_BYTES = 48;

/** The stored entry of `source`, at most `maxBytes` of UTF-8. */
export function encodeRecentPayload(source: RecentPayloadSource, maxBytes: number): string {
  const { item, payload, outcome, statuses } = source;
  const header: StoredHeader = { i: item.id };
  if (!ingestIdHasTime(item.id, item.receivedMs)) header.t = item.receivedMs;
  if (outcome && outcome.outcome !== 'accepted') header.o = outcome.outcome;
  if (outcome?.code) header.c = outcome.code;
  if (outcome?.message) header.m = clipChars(outcome.message, MESSAGE_CHARS);
  if (item.bodyIsHex) header.h = 1;
  if (statuses) header.s = statuses;
  const raw = item.body === payload ? undefined : item.body;
  if (raw !== undefined) header.pn = payload.length;
  const whole = `${JSON.stringify(header)}\n${payload}${raw ?? ''}`;
  // Most entries fit whole, measured only when they might not (a UTF-16 unit is at most 3 bytes of
  // UTF-8).
  if (whole.length * 3 <= maxBytes || Buffer.byteLength(whole) <= maxBytes) return whole;
  return shortened(header, payload, raw, maxBytes);
}

/** The entry of `header` and its texts, shortened to `maxBytes`. */
function shortened(header: StoredHeader, payload: string, raw: string | undefined, maxBytes: number): string {
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
function statusRecord(s: StatusList | undefined): Record<string, Status> {
  const out = Object.create(null) as Record<string, Status>;
  if (Array.isArray(s))
    for (let i = 0; i + 1 < s.length; i += 2) {
      const status = STATUSES[Number(s[i + 1])];
      if (status) out[String(s[i])] = status;
    }
  return out;
}

/** The header of a stored entry; undefined for a text that is none (of another version). */
function parseHeader(line: string): StoredHeader | undefined {
  let header: unknown;
  try {
    header = JSON.parse(line);
  } catch {
    return undefined;
  }
  if (typeof header !== 'object' || header === null || Array.isArray(header)) return undefined;
  return typeof (header as StoredHeader).i === 'string' ? (header as StoredHeader) : undefined;
}

/** A stored entry as served; null for one that is not (written by another version). */
export function readRecentPayload(text: string): RecentPayload | null {
  const newline = text.indexOf('\n');
  const header = newline < 0 ? undefined : parseHeader(text.slice(0, newline));
  if (!header) return null;
  const body = text.slice(newline + 1);
  const raw = header.pn === undefined ? undefined : body.slice(header.pn);
  const out: RecentPayload = {
    receivedMs: header.t === undefined ? (ingestIdTimeMs(header.i) ?? Number.NaN) : Number(header.t),
    ingestId: header.i,
    outcome: header.o ?? 'accepted',
    code: header.c ?? null,
    message: header.m ?? null,
    payload: header.pn === undefined ? body : body.slice(0, header.pn),
    statuses: statusRecord(header.s),
  };
  if (raw !== undefined) out.raw = raw;
  if (header.h === 1) out.hex = true;
  if (header.pb !== undefined) out.payloadBytes = header.pb;
  if (header.rb !== undefined) out.rawBytes = header.rb;
  return out;
}
