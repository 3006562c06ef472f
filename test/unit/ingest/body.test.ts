import { describe, expect, it } from 'vitest';
import {
  checkDeviceSource,
  checkExternalDeviceName,
  decodeBody,
  needsPreparserState,
  parseJsonBody,
  type PreparserState,
} from '../../../src/ingest/body.ts';
import type { GatewayKind } from '../../../src/domain/ingest-item.ts';

describe('decodeBody', () => {
  it.each([
    ['UTF-8 text stays text', Buffer.from('héllo °C'), 'héllo °C', false],
    ['an empty body is empty text', Buffer.alloc(0), '', false],
    ['invalid UTF-8 becomes lowercase hex', Buffer.from([0xde, 0xad, 0xbe, 0xef]), 'deadbeef', true],
    ['a truncated multi-byte sequence becomes hex', Buffer.from([0x41, 0xc3]), '41c3', true],
  ])('%s', (_name, bytes, body, bodyIsHex) => {
    expect(decodeBody(bytes)).toEqual({ body, bodyIsHex });
  });
});

describe('parseJsonBody', () => {
  it.each([
    ['{"a":1}', false, true],
    ['[1,2]', false, true],
    ['42', false, true],
    ['', false, false],
    ['   ', false, false],
    ['{"a":', false, false],
    ['deadbeef', true, false],
  ])('%j (hex: %s) is valid JSON: %s', (body, isHex, valid) => {
    const result = parseJsonBody(body, isHex);
    expect('code' in result ? result.code : 'ok').toBe(valid ? 'ok' : 'INVALID_JSON');
  });
});

describe('checkExternalDeviceName', () => {
  it('accepts 1–128 characters and refuses empty or longer names', () => {
    expect(checkExternalDeviceName(undefined)).toBeUndefined();
    expect(checkExternalDeviceName('d')).toBeUndefined();
    expect(checkExternalDeviceName('x'.repeat(128))).toBeUndefined();
    expect(checkExternalDeviceName('')?.code).toBe('MISSING_DEVICE_NAME');
    expect(checkExternalDeviceName('x'.repeat(129))?.code).toBe('MISSING_DEVICE_NAME');
  });
});

describe('checkDeviceSource', () => {
  const obj = { deviceName: 'd1' };
  const noName = { x: 1 };
  it.each<[GatewayKind, unknown, string | undefined, PreparserState, string | undefined]>([
    ['submit', obj, undefined, 'none', undefined],
    ['submit', noName, undefined, 'none', 'MISSING_DEVICE_NAME'],
    ['submit', noName, undefined, 'disabled', 'MISSING_DEVICE_NAME'],
    ['submit', noName, undefined, 'enabled', undefined],
    ['submit', [1], undefined, 'none', 'MISSING_DEVICE_NAME'],
    ['submit', { deviceName: 5 }, undefined, 'none', 'MISSING_DEVICE_NAME'],
    ['raw', undefined, 'd', 'none', undefined],
    ['raw', undefined, undefined, 'none', 'MISSING_DEVICE_NAME'],
    ['raw', undefined, undefined, 'enabled', undefined],
    ['preparserfirst', noName, undefined, 'none', 'NO_PREPARSER'],
    ['preparserfirst', noName, undefined, 'disabled', undefined],
    ['rawpreparseronly', undefined, undefined, 'none', 'NO_PREPARSER'],
    ['rawpreparserfirst', undefined, 'd', 'disabled', undefined],
    ['preparseronly', [1], undefined, 'enabled', undefined],
  ])('%s with body %j, deviceName %s and pre-parser %s → %s', (kind, json, name, pp, code) => {
    expect(checkDeviceSource(kind, json, name, pp)?.code).toBe(code);
  });

  it('asks for the pre-parser only when the answer depends on it', () => {
    expect(needsPreparserState('submit', obj, undefined)).toBe(false);
    expect(needsPreparserState('submit', noName, undefined)).toBe(true);
    expect(needsPreparserState('raw', undefined, 'd')).toBe(false);
    expect(needsPreparserState('raw', undefined, undefined)).toBe(true);
    expect(needsPreparserState('preparseronly', obj, undefined)).toBe(true);
  });
});
