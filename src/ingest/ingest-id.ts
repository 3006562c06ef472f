import { randomBytes } from 'node:crypto';

const RANDOM_BYTES_PER_POOL = 6 * 1024;
let pool = Buffer.alloc(0);
let poolOffset = 0;

/** Six random bytes, drawn from a pool so that 20k ids/s cost one randomBytes call per 1,024 ids. */
function sixRandomBytes(): Buffer {
  if (poolOffset + 6 > pool.length) {
    pool = randomBytes(RANDOM_BYTES_PER_POOL);
    poolOffset = 0;
  }
  const slice = pool.subarray(poolOffset, poolOffset + 6);
  poolOffset += 6;
  return slice;
}

/**
 * A new ingest id: the receive time in ms as 9 base-36 digits (so ids sort by time as strings until
 * the year 5188) followed by 48 random bits in base64url, e.g. `0mhz1k2ab` + `Xy3_ab9Q`. Unique
 * across processes without coordination; 17 characters.
 */
export function createIngestId(nowMs: number = Date.now()): string {
  return nowMs.toString(36).padStart(9, '0') + sixRandomBytes().toString('base64url');
}

/** Epoch ms encoded in an ingest id, or undefined when it is not one. */
export function ingestIdTimeMs(id: string): number | undefined {
  if (!/^[0-9a-z]{9}[A-Za-z0-9_-]{8}$/.test(id)) return undefined;
  return Number.parseInt(id.slice(0, 9), 36);
}
