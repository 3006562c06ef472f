import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import {
  DATA_TYPE_INFO,
  acceptedNumber,
  convertValue,
  fixedDecimals,
  formatValue,
  numericValue,
} from '../../../src/domain/data-types.ts';
import { DATA_TYPES } from '../../../src/domain/types.ts';
import type { DataType, DataValue } from '../../../src/domain/types.ts';

describe('DATA_TYPE_INFO', () => {
  it.each([
    ['string', 'string', ''],
    ['integer', 'integer', ''],
    ['number', 'number', ''],
    ['boolean', 'boolean', ''],
    ['temperature', 'tempC', ' °C'],
    ['humidity', 'relativeHumidity', ' %'],
    ['illuminance', 'lux', ' lx'],
    ['millivolts', 'milliVolts', ' mV'],
    ['co2', 'co2', ' ppm'],
    ['occupancy', 'occupancy', ''],
    ['gps', 'gps', ''],
  ] as const)('describes %s as sensorType %s with units %j', (dataType, sensorType, units) => {
    expect(DATA_TYPE_INFO[dataType]).toMatchObject({ sensorType, units });
  });

  it('covers every data type', () => {
    expect(Object.keys(DATA_TYPE_INFO).sort()).toEqual([...DATA_TYPES].sort());
  });
});

describe('convertValue', () => {
  const accepted: [DataType, unknown, DataValue][] = [
    ['string', 'open', 'open'],
    ['string', '', ''],
    ['string', 42, '42'],
    ['string', 3.5, '3.5'],
    ['string', true, 'true'],
    ['string', 'a\ud800b', 'a\ufffdb'],
    ['string', '\udc00', '\ufffd'],
    ['string', '\ud83d\ude00', '\ud83d\ude00'],
    ['integer', 42, 42],
    ['integer', 41.6, 42],
    ['integer', '41.4', 41],
    ['integer', ' 7 ', 7],
    ['integer', -2.4, -2],
    ['integer', '1e3', 1000],
    ['number', 3.14, 3.14],
    ['number', '3.14', 3.14],
    ['number', '-0.5', -0.5],
    ['number', '.5', 0.5],
    ['boolean', true, true],
    ['boolean', false, false],
    ['boolean', 1, true],
    ['boolean', 0, false],
    ['boolean', 'true', true],
    ['boolean', 'FALSE', false],
    ['boolean', 'On', true],
    ['boolean', 'off', false],
    ['boolean', '1', true],
    ['temperature', 19.24, 19.24],
    ['temperature', '-12.5', -12.5],
    ['humidity', 0, 0],
    ['humidity', 100, 100],
    ['humidity', '45.2', 45.2],
    ['illuminance', 0, 0],
    ['illuminance', 300.7, 300.7],
    ['millivolts', 3300, 3300],
    ['millivolts', -12, -12],
    ['co2', '612', 612],
    ['occupancy', 3, 3],
    ['occupancy', true, 1],
    ['occupancy', false, 0],
    ['occupancy', '2', 2],
    ['occupancy', 1.6, 2],
    ['gps', { lat: 52.37, lon: 4.89 }, { lat: 52.37, lon: 4.89 }],
    ['gps', { lat: '52.37', lon: '4.89', alt: 3 }, { lat: 52.37, lon: 4.89 }],
    ['gps', [52.37, 4.89], { lat: 52.37, lon: 4.89 }],
    ['gps', '52.37, 4.89', { lat: 52.37, lon: 4.89 }],
    ['gps', [-90, 180], { lat: -90, lon: 180 }],
  ];
  it.each(accepted)('converts %s %j to %j', (dataType, input, expected) => {
    expect(convertValue(dataType, input)).toEqual({ ok: true, value: expected });
  });

  const refused: [DataType, unknown][] = [
    ['string', { a: 1 }],
    ['string', ['a']],
    ['string', Number.NaN],
    ['integer', 'abc'],
    ['integer', ''],
    ['integer', '0x10'],
    ['integer', Number.POSITIVE_INFINITY],
    ['integer', 1e300],
    ['integer', true],
    ['number', Number.NaN],
    ['number', 'Infinity'],
    ['number', '3,14'],
    ['number', { value: 3 }],
    ['number', [3]],
    ['number', false],
    ['boolean', 'yes'],
    ['boolean', 2],
    ['boolean', {}],
    ['temperature', 'warm'],
    ['humidity', 140],
    ['humidity', -0.1],
    ['illuminance', -1],
    ['co2', '-5'],
    ['occupancy', -1],
    ['occupancy', -0.4],
    ['occupancy', 'many'],
    ['gps', { lat: 91, lon: 0 }],
    ['gps', { lat: 0, lon: -180.5 }],
    ['gps', [52.37]],
    ['gps', [52.37, 4.89, 3]],
    ['gps', '52.37'],
    ['gps', '52.37,4.89,1'],
    ['gps', { lat: 'north', lon: 4 }],
    ['gps', { latitude: 52, longitude: 4 }],
    ['gps', 52.37],
    ['gps', [Number.NaN, 4]],
  ];
  it.each(refused)('refuses %s %j with a reason', (dataType, input) => {
    const result = convertValue(dataType, input);
    expect(result).toMatchObject({ ok: false });
    expect(result?.ok === false && result.reason).toMatch(/^expected .+, got .+/);
  });

  it.each(DATA_TYPES)('skips null and undefined silently for %s', (dataType) => {
    expect(convertValue(dataType, null)).toBeNull();
    expect(convertValue(dataType, undefined)).toBeNull();
  });

  it('says what was expected and what came', () => {
    expect(convertValue('humidity', 140)).toEqual({
      ok: false,
      reason: 'expected a number between 0 and 100, got 140',
    });
    expect(convertValue('co2', -3)).toEqual({ ok: false, reason: 'expected a number ≥ 0, got -3' });
    expect(convertValue('number', { a: 1 })).toEqual({
      ok: false,
      reason: 'expected a number, got an object',
    });
    expect(convertValue('temperature', 'warm')).toEqual({
      ok: false,
      reason: 'expected a number, got "warm"',
    });
  });

  it('never rounds a number type, only integer and occupancy', () => {
    fc.assert(
      fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }), (n) => {
        expect(convertValue('number', n)).toEqual({ ok: true, value: n });
      }),
    );
  });
});

describe('formatValue', () => {
  const rows: [DataType, DataValue, string, string][] = [
    ['string', 'open', 'open', 'open'],
    ['integer', 42, '42', '42'],
    ['integer', 1234567, '1234567', '1234567'],
    ['number', 3.14, '3.14', '3,14'],
    ['number', 1234567.891, '1234567.891', '1234567,891'],
    ['boolean', true, 'true', 'true'],
    ['boolean', false, 'false', 'false'],
    ['temperature', 19.2, '19.2 °C', '19,2 °C'],
    ['temperature', 19.25, '19.3 °C', '19,3 °C'],
    ['temperature', 20, '20.0 °C', '20,0 °C'],
    ['temperature', -3.25, '-3.3 °C', '-3,3 °C'],
    ['temperature', -0.04, '0.0 °C', '0,0 °C'],
    ['temperature', 1234.5, '1234.5 °C', '1234,5 °C'],
    ['humidity', 45.24, '45.2 %', '45,2 %'],
    ['humidity', 0.15, '0.2 %', '0,2 %'],
    ['illuminance', 300.4, '300 lx', '300 lx'],
    ['illuminance', 12345.6, '12346 lx', '12346 lx'],
    ['millivolts', 3300, '3300 mV', '3300 mV'],
    ['co2', 612.5, '613 ppm', '613 ppm'],
    ['occupancy', 1, '1', '1'],
    ['gps', { lat: 52.37, lon: 4.89 }, '52.37000, 4.89000', '52,37000; 4,89000'],
    ['gps', { lat: -33.868819, lon: 151.209295 }, '-33.86882, 151.20930', '-33,86882; 151,20930'],
  ];
  it.each(rows)('formats %s %j as %j in en and %j in nl', (dataType, value, en, nl) => {
    expect(formatValue(dataType, value, 'en')).toBe(en);
    expect(formatValue(dataType, value, 'nl')).toBe(nl);
  });

  it('never groups digits', () => {
    fc.assert(
      fc.property(fc.integer({ min: -1e12, max: 1e12 }), (n) => {
        for (const dataType of ['integer', 'millivolts', 'temperature'] as const) {
          expect(formatValue(dataType, n, 'en')).not.toMatch(/[, ]\d{3}/);
          expect(formatValue(dataType, n, 'nl')).not.toMatch(/[. ]\d{3}/);
        }
      }),
    );
  });
});

describe('numericValue', () => {
  it.each([
    ['temperature', 19.2, 19.2],
    ['integer', 4, 4],
    ['occupancy', 0, 0],
    ['boolean', true, 1],
    ['boolean', false, 0],
    ['string', 'open', null],
    ['string', '42', null],
    ['gps', { lat: 1, lon: 2 }, null],
  ] as [DataType, DataValue, number | null][])('gives %s %j as %j', (dataType, value, expected) => {
    expect(numericValue(dataType, value)).toBe(expected);
  });
});

describe('fixedDecimals: the text of Intl.NumberFormat, without its cost', () => {
  // One formatter per decimals: constructing Intl.NumberFormat costs far more than formatting.
  const formatters = [0, 1, 2, 5].map(
    (d) =>
      [
        d,
        new Intl.NumberFormat('en', {
          minimumFractionDigits: d,
          maximumFractionDigits: d,
          useGrouping: false,
          signDisplay: 'negative',
        }),
      ] as const,
  );

  it('matches it on halves, carries, negative zeros and 60,000 pseudo-random values', () => {
    const values = [
      0.15, 0.25, 1.005, 2.675, -0.04, -0.05, -0, 9.96, 99.95, 0.5, 2.5, -2.5, 123456789.125, 26.04,
    ];
    // A fixed linear congruential sequence: the same values every run.
    let seed = 42;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
    for (let i = 0; i < 20_000; i++) {
      values.push(Math.round((next() - 0.5) * 2e4) / 1000);
      values.push((next() - 0.5) * 10 ** Math.floor(next() * 12));
      values.push(Math.round(next() * 1e6) / 100 - 5000);
    }
    const mismatches = values.flatMap((v) =>
      formatters.flatMap(([d, intl]) =>
        fixedDecimals(v, d) === intl.format(v) ? [] : [[v, d, fixedDecimals(v, d)]],
      ),
    );
    expect(mismatches).toEqual([]);
  });

  it('leaves exponent forms and non-finite numbers to Intl', () => {
    expect([1e21, 1e-7, Number.NaN, Number.POSITIVE_INFINITY].map((v) => fixedDecimals(v, 1))).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });
});

describe('acceptedNumber: convertValue for numbers accepted as they are', () => {
  const types: readonly DataType[] = DATA_TYPES;
  it('gives what convertValue gives, or leaves the number to it', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...types),
        fc.oneof(fc.double(), fc.integer(), fc.constantFrom(-0, 0.5, 100, 100.5, -1, 2 ** 53)),
        (dataType, n) => {
          const fast = acceptedNumber(dataType, n);
          if (fast === undefined) return;
          const converted = convertValue(dataType, n);
          expect(converted).toEqual({ ok: true, value: fast });
          expect(Object.is((converted as { value: number }).value, fast)).toBe(true);
        },
      ),
    );
  });
  it('takes the common numbers', () => {
    expect(acceptedNumber('temperature', 21.5)).toBe(21.5);
    expect(acceptedNumber('occupancy', 3)).toBe(3);
    expect(acceptedNumber('humidity', 140)).toBeUndefined();
    expect(acceptedNumber('integer', 2.5)).toBeUndefined();
    expect(acceptedNumber('string', 1)).toBeUndefined();
  });
});
