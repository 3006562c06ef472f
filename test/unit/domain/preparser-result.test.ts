import { describe, expect, it } from 'vitest';
import { normalisePreparserResult } from '../../../src/domain/preparser-result.ts';

const receivedMs = Date.UTC(2026, 10, 22, 6, 0, 0);
const nowMs = receivedMs + 1_000;

describe('normalisePreparserResult', () => {
  it('accepts one object with a string payload and uses the receive time without a time', () => {
    expect(normalisePreparserResult({ deviceName: 'd1', payload: '{"t":1}' }, receivedMs, nowMs)).toEqual([
      { ok: true, deviceName: 'd1', payloadStr: '{"t":1}', timeMs: receivedMs, deviceTime: false },
    ]);
  });

  it('JSON-stringifies an object payload and keeps the device time', () => {
    const time = receivedMs - 60_000;
    expect(
      normalisePreparserResult({ deviceName: 'd1', payload: { Temperature: 22.5 }, time }, receivedMs, nowMs),
    ).toEqual([
      { ok: true, deviceName: 'd1', payloadStr: '{"Temperature":22.5}', timeMs: time, deviceTime: true },
    ]);
  });

  it('keeps names like Object.prototype members as device names and payload keys', () => {
    const item = JSON.parse(
      '{"deviceName":"__proto__","payload":{"__proto__":1,"constructor":2}}',
    ) as unknown;
    expect(
      normalisePreparserResult([item, { deviceName: 'constructor', payload: 'x' }], receivedMs, nowMs),
    ).toEqual([
      {
        ok: true,
        deviceName: '__proto__',
        payloadStr: '{"__proto__":1,"constructor":2}',
        timeMs: receivedMs,
        deviceTime: false,
      },
      { ok: true, deviceName: 'constructor', payloadStr: 'x', timeMs: receivedMs, deviceTime: false },
    ]);
  });

  it('splits an array into readings in order (the §5 example)', () => {
    const body = {
      devEUI: 'device_3_reception',
      measurements: [
        { temperature: 22.5, humidity: 45.2, timestampInMs: 1727085443874 },
        { temperature: 22.6, humidity: 45.0, timestampInMs: 1727085503874 },
      ],
    };
    const result = body.measurements.map((m) => ({
      deviceName: body.devEUI,
      time: m.timestampInMs,
      payload: { Temperature: m.temperature, Humidity: m.humidity },
    }));
    const readings = normalisePreparserResult(result, receivedMs, nowMs);
    expect(readings).toEqual([
      {
        ok: true,
        deviceName: 'device_3_reception',
        payloadStr: '{"Temperature":22.5,"Humidity":45.2}',
        timeMs: 1727085443874,
        deviceTime: true,
      },
      {
        ok: true,
        deviceName: 'device_3_reception',
        payloadStr: '{"Temperature":22.6,"Humidity":45}',
        timeMs: 1727085503874,
        deviceTime: true,
      },
    ]);
  });

  it('gives nothing for an empty array', () => {
    expect(normalisePreparserResult([], receivedMs, nowMs)).toEqual([]);
  });

  it('fails only the bad items of an array', () => {
    const results = normalisePreparserResult(
      [{ deviceName: 'a', payload: '1' }, 'junk', { deviceName: 'b', payload: '2' }],
      receivedMs,
      nowMs,
    );
    expect(results.map((r) => r.ok)).toEqual([true, false, true]);
    expect(results[1]).toMatchObject({ code: 'PREPARSER_BAD_RESULT' });
  });

  it.each([
    ['a string', 'hello', 'PREPARSER_BAD_RESULT', null],
    ['null', null, 'PREPARSER_BAD_RESULT', null],
    ['a number', 42, 'PREPARSER_BAD_RESULT', null],
    ['no deviceName', { payload: '{}' }, 'MISSING_DEVICE_NAME', null],
    ['an empty deviceName', { deviceName: ' ', payload: '{}' }, 'MISSING_DEVICE_NAME', null],
    ['a numeric deviceName', { deviceName: 17, payload: '{}' }, 'MISSING_DEVICE_NAME', null],
    ['no payload', { deviceName: 'd1' }, 'PREPARSER_BAD_RESULT', 'd1'],
    ['a numeric payload', { deviceName: 'd1', payload: 5 }, 'PREPARSER_BAD_RESULT', 'd1'],
    ['a text time', { deviceName: 'd1', payload: '{}', time: '2026-11-22' }, 'INVALID_TIMESTAMP', 'd1'],
    ['a NaN time', { deviceName: 'd1', payload: '{}', time: Number.NaN }, 'INVALID_TIMESTAMP', 'd1'],
    ['a time in seconds', { deviceName: 'd1', payload: '{}', time: 1727085443 }, 'INVALID_TIMESTAMP', 'd1'],
    ['a negative time', { deviceName: 'd1', payload: '{}', time: -1 }, 'INVALID_TIMESTAMP', 'd1'],
    [
      'a time over 5 minutes ahead',
      { deviceName: 'd1', payload: '{}', time: nowMs + 5 * 60_000 + 1 },
      'FUTURE_TIMESTAMP',
      'd1',
    ],
  ])('refuses %s with its code and the device name when known', (_what, result, code, deviceName) => {
    expect(normalisePreparserResult(result, receivedMs, nowMs)).toEqual([
      { ok: false, code, message: expect.any(String) as string, deviceName },
    ]);
  });

  it('accepts a time exactly 5 minutes ahead and rounds fractional milliseconds', () => {
    const [ahead] = normalisePreparserResult(
      { deviceName: 'd', payload: '', time: nowMs + 300_000 },
      receivedMs,
      nowMs,
    );
    expect(ahead).toMatchObject({ ok: true, timeMs: nowMs + 300_000 });
    const [fraction] = normalisePreparserResult(
      { deviceName: 'd', payload: '', time: receivedMs + 0.6 },
      receivedMs,
      nowMs,
    );
    expect(fraction).toMatchObject({ ok: true, timeMs: receivedMs + 1 });
  });

  it('refuses more than 10,000 readings as one bad result', () => {
    const many = Array.from({ length: 10_001 }, () => ({ deviceName: 'd', payload: '{}' }));
    expect(normalisePreparserResult(many, receivedMs, nowMs)).toEqual([
      {
        ok: false,
        code: 'PREPARSER_BAD_RESULT',
        message: expect.any(String) as string,
        deviceName: null,
      },
    ]);
    expect(normalisePreparserResult(many.slice(1), receivedMs, nowMs)).toHaveLength(10_000);
  });
});
