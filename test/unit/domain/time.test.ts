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

describe('isoUtc agrees with Date#toISOString', () => {
  const DAY = 86_400_000;
  it.each([
    ['the last ms of a day', Date.UTC(2026, 10, 22) - 1],
    ['a leap day', Date.UTC(2024, 1, 29, 23, 59, 59, 999)],
    ['the last ms before year 10000', Date.UTC(9999, 11, 31, 23, 59, 59, 999)],
    ['year 10000 (six-digit year)', Date.UTC(10000, 0, 1)],
    ['a time before 1970', -1],
    ['a fractional ms', 1727085443874.75],
  ])('for %s', (_, ms) => {
    expect(isoUtc(ms)).toBe(new Date(ms).toISOString());
  });

  it('for 10,000 times spread over 60 years, days repeated and not', () => {
    let ms = Date.UTC(1990, 0, 1);
    for (let i = 0; i < 10_000; i++) {
      ms += ((i * 7919) % 5000) * DAY + ((i * 104729) % DAY);
      if (i % 3 === 0) ms -= 4000 * DAY;
      expect(isoUtc(ms)).toBe(new Date(ms).toISOString());
    }
  });
});
