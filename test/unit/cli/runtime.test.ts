import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { parse, parseExpiry, table } from '../../../src/cli/runtime.ts';

describe('parseExpiry', () => {
  const now = Date.UTC(2026, 0, 1);

  it('reads durations, ISO times and never', () => {
    expect(parseExpiry('30d', now)).toBe(now + 30 * 86400_000);
    expect(parseExpiry('12h', now)).toBe(now + 12 * 3600_000);
    expect(parseExpiry('90m', now)).toBe(now + 90 * 60_000);
    expect(parseExpiry('2w', now)).toBe(now + 14 * 86400_000);
    expect(parseExpiry('2027-01-01T00:00:00Z', now)).toBe(Date.UTC(2027, 0, 1));
    expect(parseExpiry('never', now)).toBe(0);
  });

  it('refuses other forms and times in the past as usage errors', () => {
    for (const bad of ['30', 'd30', 'tomorrow', '2025-01-01T00:00:00Z', '']) {
      expect(() => parseExpiry(bad, now)).toThrow(InvalidArgumentError);
    }
  });
});

describe('argument parsers', () => {
  it('accept positive numbers and locales, refuse the rest', () => {
    expect(parse.positiveInt('5')).toBe(5);
    expect(parse.positiveNumber('2.5')).toBe(2.5);
    expect(parse.locale('nl')).toBe('nl');
    for (const [fn, bad] of [
      [parse.positiveInt, '2.5'],
      [parse.positiveInt, '0'],
      [parse.positiveNumber, 'abc'],
      [parse.positiveNumber, '-1'],
      [parse.locale, 'fr'],
    ] as const) {
      expect(() => fn(bad)).toThrow(InvalidArgumentError);
    }
  });
});

describe('table', () => {
  it('aligns columns and prints nothing for no rows', () => {
    expect(table(['A', 'BB'], [['long', 'x']])).toEqual(['A     BB', 'long  x']);
    expect(table(['A'], [])).toEqual([]);
  });
});
