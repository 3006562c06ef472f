import { randomBytes } from 'node:crypto';

const RANDOM_BYTES_PER_POOL = 6 * 1024;
let pool = Buffer.alloc(0);
let poolOffset = 0;

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';

/**
 * Six random bytes from a pool (20k ids/s cost one randomBytes call per 1,024 ids) as 8 base64url
 * characters, written out here: a Buffer slice and its toString per id cost more than the rest of
 * an id together.
 */
function randomSuffix(): string {
  if (poolOffset + 6 > pool.length) {
    pool = randomBytes(RANDOM_BYTES_PER_POOL);
    poolOffset = 0;
  }
  const i = poolOffset;
  poolOffset += 6;
  return base64urlOfSix(pool, i);
}

/** Bytes i..i+5 of `b` in base64url (8 characters, no padding): Buffer's toString('base64url') of them. */
export function base64urlOfSix(b: Uint8Array, i: number): string {
  const x = (b[i]! << 16) | (b[i + 1]! << 8) | b[i + 2]!;
  const y = (b[i + 3]! << 16) | (b[i + 4]! << 8) | b[i + 5]!;
  return (
    BASE64URL[x >> 18]! +
    BASE64URL[(x >> 12) & 63]! +
    BASE64URL[(x >> 6) & 63]! +
    BASE64URL[x & 63]! +
    BASE64URL[y >> 18]! +
    BASE64URL[(y >> 12) & 63]! +
    BASE64URL[(y >> 6) & 63]! +
    BASE64URL[y & 63]!
  );
}

/**
 * The 9 base-36 digits of a time in ms, remembering the last: ids made or checked in the same ms
 * share them. One per caller, so that making ids and checking them do not evict each other.
 */
function timePrefixes(): (ms: number) => string {
  let lastMs = -1;
  let last = '';
  return (ms) => {
    if (ms !== lastMs) {
      lastMs = ms;
      last = ms.toString(36).padStart(9, '0');
    }
    return last;
  };
}

const newIdPrefix = timePrefixes();
const checkedPrefix = timePrefixes();

/**
 * A new ingest id: the receive time in ms as 9 base-36 digits (so ids sort by time as strings until
 * the year 5188) followed by 48 random bits in base64url, e.g. `0mhz1k2ab` + `Xy3_ab9Q`. Unique
 * across processes without coordination; 17 characters.
 */
export function createIngestId(nowMs: number = Date.now()): string {
  return newIdPrefix(nowMs) + randomSuffix();
}

/** Whether `id` is an ingest id of time `ms` (what ingestIdTimeMs answers, without parsing it). */
export function ingestIdHasTime(id: string, ms: number): boolean {
  return id.length === 17 && id.startsWith(checkedPrefix(ms));
}

/** Epoch ms encoded in an ingest id, or undefined when it is not one. */
export function ingestIdTimeMs(id: string): number | undefined {
  if (!/^[0-9a-z]{9}[A-Za-z0-9_-]{8}$/.test(id)) return undefined;
  return Number.parseInt(id.slice(0, 9), 36);
}
