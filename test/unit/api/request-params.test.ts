import { describe, expect, it } from 'vitest';
import {
  collectAttributes,
  parseQuery,
  readArray,
  readBoolean,
  readNumber,
  readString,
  sensorRefItem,
  stringItem,
} from '../../../src/api/request-params.ts';
import { isAppError } from '../../../src/errors/app-error.ts';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (err) {
    return isAppError(err)
      ? `${err.code}:${JSON.stringify(err.details?.attribute ?? '').replace(/"/g, '')}`
      : 'not an AppError';
  }
};

describe('request attributes', () => {
  it.each([
    ['key=value pairs', 'deviceName=a%20b', { deviceName: 'a b' }],
    ['repeated keys as an array', 'devices=a&devices=b', { devices: ['a', 'b'] }],
    ['a raw whole-query JSON object', '{"deviceName":"x","n":1}', { deviceName: 'x', n: 1 }],
    [
      'a URL-encoded whole-query JSON object',
      encodeURIComponent('{"deviceName":"x y"}'),
      { deviceName: 'x y' },
    ],
    ['a form-encoded whole-query JSON object', '%7B%22deviceName%22:%22x+y%22%7D', { deviceName: 'x y' }],
    ['a raw JSON object with a plus sign', '{"deviceName":"a+b"}', { deviceName: 'a+b' }],
    [
      'a JSON object with escaped quotes and spaces (as fetch sends it)',
      '{%22deviceName%22:%22a%20b%22}',
      { deviceName: 'a b' },
    ],
    ['a raw JSON object holding an escaped space', '{"deviceName":"a%20b"}', { deviceName: 'a b' }],
    ['nothing', '', {}],
  ])('reads %s from the query string', (_name, query, expected) => {
    expect(parseQuery(query)).toEqual(expected);
  });

  it('reads parameters named like Object.prototype members as plain attributes', () => {
    const attrs = parseQuery('__proto__=a&__proto__=b&constructor=c&toString=d&deviceName=x');
    expect(Object.entries(attrs)).toEqual([
      ['__proto__', ['a', 'b']],
      ['constructor', 'c'],
      ['toString', 'd'],
      ['deviceName', 'x'],
    ]);
    expect(readString(collectAttributes('constructor=c&deviceName=x', '', undefined), 'deviceName')).toBe(
      'x',
    );
    expect(Array.isArray(Object.getPrototypeOf(attrs))).toBe(false);
  });

  it('refuses a query string that looks like JSON but is not', () => {
    expect(codeOf(() => parseQuery('{"deviceName":'))).toBe('INVALID_JSON:');
  });

  it('reads a JSON body whatever its Content-Type, and lets it win over the query', () => {
    expect(
      collectAttributes('deviceName=q', '{"deviceName":"b"}', 'application/x-www-form-urlencoded'),
    ).toEqual({
      deviceName: 'b',
    });
    expect(collectAttributes('', '{"a":1}', undefined)).toEqual({ a: 1 });
  });

  it('reads a form body that is not JSON', () => {
    expect(collectAttributes('', 'deviceName=x', 'application/x-www-form-urlencoded')).toEqual({
      deviceName: 'x',
    });
  });

  it('refuses a body that is neither a JSON object nor a form', () => {
    expect(codeOf(() => collectAttributes('', 'nope', 'text/plain'))).toBe('INVALID_JSON:');
    expect(codeOf(() => collectAttributes('', '[1]', 'application/json'))).toBe('INVALID_JSON:');
  });
});

describe('typed attribute readers', () => {
  it('names the missing or malformed attribute', () => {
    expect(codeOf(() => readString({}, 'deviceName'))).toBe('MISSING_ATTRIBUTE:deviceName');
    expect(codeOf(() => readString({ deviceName: 3 }, 'deviceName'))).toBe('INVALID_ATTRIBUTE:deviceName');
    expect(codeOf(() => readBoolean({ b: 'yes' }, 'b'))).toBe('INVALID_ATTRIBUTE:b');
    expect(codeOf(() => readNumber({ n: 'x' }, 'n'))).toBe('INVALID_ATTRIBUTE:n');
    expect(codeOf(() => readNumber({ n: 1.5 }, 'n', { integer: true }))).toBe('INVALID_ATTRIBUTE:n');
    expect(codeOf(() => readNumber({ n: 0 }, 'n', { min: 1 }))).toBe('INVALID_ATTRIBUTE:n');
  });

  it('turns the text forms of the query string into booleans and numbers', () => {
    expect(readBoolean({ b: 'true' }, 'b')).toBe(true);
    expect(readBoolean({ b: 'false' }, 'b')).toBe(false);
    expect(readBoolean({ b: false }, 'b')).toBe(false);
    expect(readNumber({ n: '1700000000' }, 'n')).toBe(1700000000);
    expect(readNumber({}, 'n')).toBeUndefined();
  });

  it('keeps a device name that reads like a boolean a string', () => {
    expect(readString({ deviceName: 'true' }, 'deviceName')).toBe('true');
  });

  it.each([
    ['a JSON array', ['a', 'b']],
    ['repeated keys', ['a', 'b']],
    ['a JSON array string', '["a","b"]'],
  ])('reads an array from %s', (_name, value) => {
    expect(readArray({ devices: value }, 'devices', 'names', stringItem)).toEqual(['a', 'b']);
  });

  it('reads a single value as a one-item array', () => {
    expect(readArray({ devices: 'a' }, 'devices', 'names', stringItem)).toEqual(['a']);
  });

  it('reads sensor references from JSON strings and objects', () => {
    const refs = readArray(
      { sensors: ['{"deviceName":"d","sensorName":"s"}', { deviceName: 'e', sensorName: 't' }] },
      'sensors',
      'refs',
      sensorRefItem,
    );
    expect(refs).toEqual([
      { deviceName: 'd', sensorName: 's' },
      { deviceName: 'e', sensorName: 't' },
    ]);
    expect(
      codeOf(() => readArray({ sensors: [{ deviceName: 'd' }] }, 'sensors', 'refs', sensorRefItem)),
    ).toBe('INVALID_ATTRIBUTE:sensors');
  });
});
