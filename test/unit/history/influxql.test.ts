import { describe, expect, it } from 'vitest';
import { anyOfRegex, ident, parseRfc3339Ns, str } from '../../../src/history/influxql.ts';
import { last24HoursQuery } from '../../../src/history/last-24-hours.ts';
import { rollupContinuousQuery } from '../../../src/history/schema.ts';

describe('InfluxQL quoting', () => {
  it('quotes identifiers and string literals', () => {
    expect(ident('a"b\\c')).toBe('"a\\"b\\\\c"');
    expect(str("it's \\ here")).toBe("'it\\'s \\\\ here'");
  });
  it('builds an exact-match regex with metacharacters and slashes escaped, duplicates removed', () => {
    expect(anyOfRegex(['a.b', 'c/d', 'a.b', 'e (1)'])).toBe('/^(?:a\\.b|c\\/d|e \\(1\\))$/');
    const re = new RegExp(anyOfRegex(['x.y', 'p+q']).slice(1, -1).replace(/\\\//g, '/'));
    expect(re.test('x.y')).toBe(true);
    expect(re.test('xzy')).toBe(false);
    expect(re.test('p+q')).toBe(true);
  });
});

describe('parseRfc3339Ns', () => {
  it.each([
    ['2026-11-22T05:40:44Z', 1_795_326_044_000_000_000n],
    ['2026-11-22T05:40:44.5Z', 1_795_326_044_500_000_000n],
    ['2026-11-22T05:40:44.123456789Z', 1_795_326_044_123_456_789n],
  ])('parses %s exactly', (s, ns) => {
    expect(parseRfc3339Ns(s)).toBe(ns);
  });
});

describe('last24HoursQuery', () => {
  it('covers the 24 clock hours ending with the current one', () => {
    const now = Date.UTC(2026, 10, 22, 5, 40);
    const q = last24HoursQuery('demo', [{ device: 'd', sensor: 's' }], now);
    expect(q).toContain(`time >= ${Date.UTC(2026, 10, 21, 6)}ms AND time < ${Date.UTC(2026, 10, 22, 6)}ms`);
    expect(q).toContain(`"env" = 'demo'`);
    expect(q).toContain('GROUP BY time(1h), "device", "sensor" fill(none)');
  });
});

describe('rollupContinuousQuery', () => {
  it('names the query after a hash of its text, so a changed text gets a new name', () => {
    const a = rollupContinuousQuery('vigil', '1m');
    expect(a.name).toBe(rollupContinuousQuery('vigil', '1m').name);
    expect(a.name).not.toBe(rollupContinuousQuery('vigil', '5m').name);
    expect(a.create).toContain('RESAMPLE EVERY 1m FOR 2h');
    expect(a.create).toContain('INTO "vigil"."long"."readings_hourly" FROM "vigil"."raw"."readings"');
    expect(a.create).toContain('GROUP BY time(1h), * END');
  });
});
