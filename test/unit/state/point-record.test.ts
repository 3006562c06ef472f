import { describe, expect, it } from 'vitest';
import { decodePoint, encodePoint, type PointRecord } from '../../../src/state/point-record.ts';

const record: PointRecord = {
  updatedMs: 1_800_000_123_456,
  offsetNs: 999_999,
  rule: 2,
  rulesId: 'a1b2c3',
  status: 'CRITICAL',
  lastSuccessMs: null,
  statusSinceMs: 1_800_000_000_001,
  hour: { hour: 500_000, count: 3, total: 0.1 + 0.2 + 0.3, min: -1e-9, max: 1e300, late: true },
  receivedMs: 1_800_000_124_000,
  held: [
    { rule: 2, sinceMs: 1_800_000_000_001 },
    { rule: 0, sinceMs: null },
  ],
  shownValue: '31.0 °C \u0000 with a NUL',
};

describe('packed data point state', () => {
  it('decodes what it encodes, exactly (doubles, never-set times, UTF-8 strings)', () => {
    expect(decodePoint(encodePoint(record))).toEqual(record);
    const plain = {
      ...record,
      status: 'ÄRGER ✓',
      rulesId: '',
      lastSuccessMs: 5,
      hour: null,
      receivedMs: null,
      held: [],
      shownValue: '',
    };
    expect(decodePoint(encodePoint(plain))).toEqual(plain);
  });

  it('gives null for another layout, a short buffer or a missing terminator', () => {
    const b = encodePoint(record);
    expect(decodePoint(Buffer.concat([Buffer.from([1]), b.subarray(1)]))).toBeNull();
    expect(decodePoint(b.subarray(0, 40))).toBeNull();
    expect(decodePoint(b.subarray(0, b.length - 1))).toBeNull();
  });
});
