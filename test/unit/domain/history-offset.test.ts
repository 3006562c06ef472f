import { describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { payloadFingerprint, valueOffsetNs } from '../../../src/domain/history-offset.ts';

describe('payloadFingerprint', () => {
  it('is deterministic hex and differs between payloads', () => {
    const a = payloadFingerprint('device_1\n{"Temperature":21.5}');
    expect(a).toMatch(/^[0-9a-f]{16}$/);
    expect(payloadFingerprint('device_1\n{"Temperature":21.5}')).toBe(a);
    expect(payloadFingerprint('device_1\n{"Temperature":21.6}')).not.toBe(a);
  });

  it('stays the first 16 hex digits of SHA-1 (a replay after an upgrade must land on the same points)', () => {
    expect(payloadFingerprint('device_1\n{"Temperature":21.5}')).toBe('87ff51951e5cb1cc');
    expect(payloadFingerprint('d\n{"t":"é ✓"}')).toBe(
      createHash('sha1').update('d\n{"t":"é ✓"}').digest('hex').slice(0, 16),
    );
  });
});

describe('valueOffsetNs', () => {
  it('is an integer within one millisecond for any payload and position', () => {
    fc.assert(
      fc.property(fc.string(), fc.integer({ min: -1, max: 100_000 }), (text, position) => {
        const offset = valueOffsetNs(payloadFingerprint(text), position);
        expect(Number.isInteger(offset)).toBe(true);
        expect(offset).toBeGreaterThanOrEqual(0);
        expect(offset).toBeLessThanOrEqual(999_999);
      }),
    );
  });

  it('lands a redelivered identical payload on the same offsets', () => {
    const text = '{"devEUI":"device_3","measurements":[1,2,3]}';
    const first = [1, 2, 3].map((p) => valueOffsetNs(payloadFingerprint(text), p));
    const again = [1, 2, 3].map((p) => valueOffsetNs(payloadFingerprint(text), p));
    expect(again).toEqual(first);
  });

  it('gives distinct payloads distinct offsets', () => {
    const offsets = new Set<number>();
    for (let i = 0; i < 2_000; i += 1) {
      offsets.add(valueOffsetNs(payloadFingerprint(`{"Temperature":${20 + i / 100}}`), 1));
    }
    // Birthday bound over 1e6 slots: 2,000 payloads collide about twice at most.
    expect(offsets.size).toBeGreaterThanOrEqual(1_995);
  });

  it('gives distinct positions of one payload distinct offsets', () => {
    const fingerprint = payloadFingerprint('{"a":1,"b":2}');
    const offsets = new Set(Array.from({ length: 200 }, (_, p) => valueOffsetNs(fingerprint, p)));
    expect(offsets.size).toBe(200);
  });
});
