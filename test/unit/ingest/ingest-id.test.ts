import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { base64urlOfSix, createIngestId, ingestIdTimeMs } from '../../../src/ingest/ingest-id.ts';

describe('ingest ids', () => {
  it('write six bytes exactly as base64url', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 6, maxLength: 12 }), fc.nat(6), (bytes, at) => {
        const i = Math.min(at, bytes.length - 6);
        expect(base64urlOfSix(bytes, i)).toBe(Buffer.from(bytes.subarray(i, i + 6)).toString('base64url'));
      }),
    );
  });

  it('are unique, carry their time and sort by it', () => {
    const ids = Array.from({ length: 50_000 }, (_, n) => createIngestId(1_795_489_696_791 + (n >> 8)));
    expect(new Set(ids).size).toBe(ids.length);
    for (const id of ids.slice(0, 100)) expect(id).toMatch(/^[0-9a-z]{9}[A-Za-z0-9_-]{8}$/);
    expect(ingestIdTimeMs(ids[0]!)).toBe(1_795_489_696_791);
    expect(ingestIdTimeMs(ids.at(-1)!)).toBe(1_795_489_696_791 + (49_999 >> 8));
    expect([...ids].sort((a, b) => a.slice(0, 9).localeCompare(b.slice(0, 9)))).toEqual(ids);
  });
});
