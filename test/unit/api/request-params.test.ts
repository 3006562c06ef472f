import { describe, expect, it } from 'vitest';
import { attr, attributes, parseAttributes } from '../../../src/api/attributes.ts';
import { collectAttributes, parseQuery } from '../../../src/api/request-params.ts';
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
    const schema = attributes({ deviceName: attr.string() });
    expect(parseAttributes(schema, collectAttributes('constructor=c&deviceName=x', '', undefined))).toEqual({
      deviceName: 'x',
    });
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
