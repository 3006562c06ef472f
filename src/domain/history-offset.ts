/**
 * Sub-millisecond offsets for history points (docs/domain.md#history-point-offsets): InfluxDB overwrites
 * points with equal series and timestamp, so each value is written at `timeMs` plus an offset in
 * nanoseconds derived from its payload and its position in it. Distinct payloads in the same
 * millisecond then (almost surely) land on distinct points, while a redelivered identical
 * payload lands on the same point again, which keeps replays idempotent.
 */
import { hash } from 'node:crypto';

/** Offsets stay below one millisecond so the point still sorts into its own millisecond. */
const OFFSETS_PER_MS = 1_000_000;

/** A stable fingerprint of a payload's text: 16 hex characters of SHA-1. */
export function payloadFingerprint(text: string): string {
  // One-shot hash: the same digest as createHash's, without a Hash object per payload (0.6 against 1.4 µs).
  return hash('sha1', text, 'hex').slice(0, 16);
}

/**
 * The offset in nanoseconds, an integer in [0, 999_999], for the value at `position` (any
 * integer, e.g. the key's index in the parser result) of the payload with `fingerprint`.
 * Runs once per value on the hot path, so it mixes integers instead of hashing again.
 */
export function valueOffsetNs(fingerprint: string, position: number): number {
  return offsetFromSeed(fingerprintSeed(fingerprint), position);
}

/** The part of valueOffsetNs that depends on the payload alone: computed once per payload. */
export function fingerprintSeed(fingerprint: string): number {
  return fnv1a32(fingerprint);
}

/** valueOffsetNs(fingerprint, position) from fingerprintSeed(fingerprint). */
export function offsetFromSeed(seed: number, position: number): number {
  const mixed = fmix32((seed + Math.imul(position | 0, 0x9e3779b1)) | 0);
  return mixed % OFFSETS_PER_MS;
}

/** FNV-1a over UTF-16 code units: cheap, deterministic, good enough to spread a hex digest. */
function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i += 1) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return hash >>> 0;
}

/** MurmurHash3's finaliser: a bijection on 32-bit integers that scatters nearby inputs. */
function fmix32(input: number): number {
  let h = input;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}
