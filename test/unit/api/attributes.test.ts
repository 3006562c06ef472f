import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { attr, attributes, parseAttributes, type AttributesSchema } from '../../../src/api/attributes.ts';
import { isAppError } from '../../../src/errors/app-error.ts';

/** `CODE:attribute` of the error parsing `attrs` gives, or undefined when it parses. */
function codeOf(schema: AttributesSchema<unknown>, attrs: Record<string, unknown>): string | undefined {
  try {
    parseAttributes(schema, attrs);
    return undefined;
  } catch (err) {
    return isAppError(err) ? `${err.code}:${String(err.details?.attribute)}` : 'not an AppError';
  }
}

const sensorRef = z.object(
  { deviceName: attr.string(), sensorName: attr.string() },
  { error: 'a {deviceName, sensorName} object' },
);
const schemas = {
  name: attributes({ deviceName: attr.string() }),
  flag: attributes({ b: attr.boolean() }),
  n: attributes({ n: attr.number({ min: 0, max: 253402300799 }).optional() }),
  limit: attributes({ n: attr.number({ integer: true, min: 1, max: 10 }).optional() }),
  kind: attributes({ k: attr.oneOf(['json', 'csv']).optional() }),
  devices: attributes({ devices: attr.list(attr.string(), { max: 3 }) }),
  sensors: attributes({ sensors: attr.list(sensorRef, { max: 3 }) }),
};

describe('request attributes against their schema', () => {
  it.each([
    ['absent', undefined],
    ['null', null],
    ['empty text', ''],
  ])('answers MISSING_ATTRIBUTE to a required attribute that is %s', (_name, value) => {
    expect(codeOf(schemas.name, { deviceName: value })).toBe('MISSING_ATTRIBUTE:deviceName');
    expect(codeOf(schemas.flag, { b: value })).toBe('MISSING_ATTRIBUTE:b');
    expect(codeOf(schemas.devices, { devices: value })).toBe('MISSING_ATTRIBUTE:devices');
  });

  it('leaves an optional attribute that is absent, null or empty text undefined', () => {
    for (const n of [undefined, null, '']) expect(parseAttributes(schemas.n, { n })).toEqual({});
  });

  it.each([
    ['a number for a string', schemas.name, { deviceName: 3 }, 'deviceName'],
    ['two values for a string', schemas.name, { deviceName: ['a', 'b'] }, 'deviceName'],
    ['text other than true/false', schemas.flag, { b: 'yes' }, 'b'],
    ['a number for a boolean', schemas.flag, { b: 1 }, 'b'],
    ['text that is no number', schemas.n, { n: 'soon' }, 'n'],
    ['a boolean for a number', schemas.n, { n: true }, 'n'],
    ['a number below the minimum', schemas.n, { n: -1 }, 'n'],
    ['numeric text above the maximum', schemas.n, { n: '1e20' }, 'n'],
    ['a fraction for an integer', schemas.limit, { n: 1.5 }, 'n'],
    ['an integer out of range', schemas.limit, { n: 0 }, 'n'],
    ['a value outside the choices', schemas.kind, { k: 'xml' }, 'k'],
    ['a list of numbers for names', schemas.devices, { devices: [1, 2] }, 'devices'],
    ['an empty name in a list', schemas.devices, { devices: ['a', ''] }, 'devices'],
    ['a reference without sensorName', schemas.sensors, { sensors: [{ deviceName: 'd' }] }, 'sensors'],
    ['text that is no reference', schemas.sensors, { sensors: ['x'] }, 'sensors'],
    ['a broken JSON array string', schemas.sensors, { sensors: '[{"deviceName":' }, 'sensors'],
  ])('answers INVALID_ATTRIBUTE to %s', (_name, schema, attrs, attribute) => {
    expect(codeOf(schema as AttributesSchema<unknown>, attrs)).toBe(`INVALID_ATTRIBUTE:${attribute}`);
  });

  it('names the item and field of a list that fails in the message', () => {
    expect(() => parseAttributes(schemas.sensors, { sensors: [{ deviceName: 'd' }] })).toThrow(
      /sensors\[0\]\.sensorName/,
    );
  });

  it('turns the text forms of the query string into booleans and numbers', () => {
    expect(parseAttributes(schemas.flag, { b: 'true' })).toEqual({ b: true });
    expect(parseAttributes(schemas.flag, { b: 'false' })).toEqual({ b: false });
    expect(parseAttributes(schemas.flag, { b: false })).toEqual({ b: false });
    expect(parseAttributes(schemas.n, { n: '1700000000' })).toEqual({ n: 1700000000 });
    expect(parseAttributes(schemas.n, { n: ' 2.5 ' })).toEqual({ n: 2.5 });
    expect(parseAttributes(schemas.limit, { n: 10 })).toEqual({ n: 10 });
  });

  it('keeps a device name that reads like a boolean or a number a string', () => {
    expect(parseAttributes(schemas.name, { deviceName: 'true' })).toEqual({ deviceName: 'true' });
    expect(parseAttributes(schemas.name, { deviceName: '42' })).toEqual({ deviceName: '42' });
  });

  it.each([
    ['a JSON array', ['a', 'b']],
    ['repeated keys holding a JSON array string', ['["a"]', 'b']],
    ['a JSON array string', '["a","b"]'],
  ])('reads a list from %s', (_name, devices) => {
    expect(parseAttributes(schemas.devices, { devices })).toEqual({ devices: ['a', 'b'] });
  });

  it('reads a single value as a one-item list, and an empty list as empty', () => {
    expect(parseAttributes(schemas.devices, { devices: 'a' })).toEqual({ devices: ['a'] });
    expect(parseAttributes(schemas.devices, { devices: [] })).toEqual({ devices: [] });
    expect(parseAttributes(schemas.devices, { devices: '[]' })).toEqual({ devices: [] });
  });

  it('reads sensor references from JSON strings and objects, dropping other fields', () => {
    const sensors = ['{"deviceName":"d","sensorName":"s","extra":1}', { deviceName: 'e', sensorName: 't' }];
    expect(parseAttributes(schemas.sensors, { sensors })).toEqual({
      sensors: [
        { deviceName: 'd', sensorName: 's' },
        { deviceName: 'e', sensorName: 't' },
      ],
    });
  });

  it('answers BATCH_TOO_LARGE with the maximum above it, counting items before checking them', () => {
    for (const devices of [['a', 'b', 'c', 'd'], ['a', 'b', 'c', 4], '["a","b","c","d"]']) {
      try {
        parseAttributes(schemas.devices, { devices });
        expect.unreachable();
      } catch (err) {
        expect(isAppError(err) && [err.code, err.details]).toEqual([
          'BATCH_TOO_LARGE',
          { attribute: 'devices', maxItems: 3 },
        ]);
      }
    }
    expect(parseAttributes(schemas.devices, { devices: ['a', 'b', 'c'] }).devices).toHaveLength(3);
  });

  it('reports the first failing attribute in the order the schema declares them', () => {
    const schema = attributes({ a: attr.string(), b: attr.number().optional(), c: attr.boolean() });
    expect(codeOf(schema, { b: 'x' })).toBe('MISSING_ATTRIBUTE:a');
    expect(codeOf(schema, { a: 'ok', b: 'x' })).toBe('INVALID_ATTRIBUTE:b');
    expect(codeOf(schema, { a: 'ok', b: 1 })).toBe('MISSING_ATTRIBUTE:c');
  });

  it('ignores attributes the schema does not declare', () => {
    expect(parseAttributes(schemas.name, { deviceName: 'x', other: 1, constructor: 'c' })).toEqual({
      deviceName: 'x',
    });
  });
});
