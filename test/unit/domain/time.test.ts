import { describe, expect, it } from 'vitest';
import { isoUtc } from '../../../src/domain/time.ts';

describe('isoUtc', () => {
  it.each([
    [0, '1970-01-01T00:00:00.000Z'],
    [1727085443874, '2024-09-23T09:57:23.874Z'],
    [Date.UTC(2026, 10, 22, 5, 45, 21, 7), '2026-11-22T05:45:21.007Z'],
  ])('formats %d as %s', (ms, iso) => {
    expect(isoUtc(ms)).toBe(iso);
  });

  it.each([null, undefined, Number.NaN, Number.POSITIVE_INFINITY, 9e15])('gives null for %s', (ms) => {
    expect(isoUtc(ms)).toBeNull();
  });
});
