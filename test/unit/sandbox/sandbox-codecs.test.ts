import { describe, expect, it } from 'vitest';
import { isAppError } from '../../../src/errors/app-error.ts';
import { chunksBySize } from '../../../src/sandbox/batch.ts';
import { checkSyntax } from '../../../src/sandbox/check-syntax.ts';
import type { ParseOutcome } from '../../../src/sandbox/sandbox.ts';
import {
  codec,
  fixture,
  inline,
  inlineCodec,
  input,
  RECEIVED_MS,
  testSandbox,
  uplink,
} from './parser-fixtures.ts';

const codes = (outcomes: ParseOutcome[]) => outcomes.map((o) => (o.ok ? 'ok' : o.code));

/** A GPS tracker frame (test/fixtures/codecs/gps-tracker.js), built with the host's own writers. */
function trackerFrame(
  latitude: number,
  longitude: number,
  altitude: number,
  accessPoints: [string, number][],
) {
  const frame = Buffer.alloc(11 + 7 * accessPoints.length);
  frame.writeInt32BE(latitude, 0);
  frame.writeInt32BE(longitude, 4);
  frame.writeInt16BE(altitude, 8);
  frame.writeUInt8(accessPoints.length, 10);
  accessPoints.forEach(([mac, rssi], i) => {
    Buffer.from(mac.replaceAll(':', ''), 'hex').copy(frame, 11 + 7 * i);
    frame.writeInt8(rssi, 11 + 7 * i + 6);
  });
  return frame.toString('hex');
}

describe('TS013 codecs', () => {
  it.each([
    ['temperature-humidity', uplink('f9a2 01c7 96', 1), { temperature: -16.3, humidity: 45.5, battery: 3 }],
    [
      'flags-counter',
      uplink('09 ffffffff 3c00 21', 2),
      {
        door: 'open',
        tamper: false,
        lowBattery: false,
        buttonPressed: true,
        openings: 4294967295,
        intervalMinutes: 60,
        firmware: '2.1',
      },
    ],
    [
      'gps-tracker',
      uplink(
        trackerFrame(-338688197, 1512092955, 58, [
          ['aa:bb:cc:dd:ee:01', -70],
          ['00:11:22:33:44:55', -42],
        ]),
        3,
      ),
      {
        position: { latitude: -33.8688197, longitude: 151.2092955, altitude: 58 },
        accessPoints: [
          { mac: 'aa:bb:cc:dd:ee:01', rssi: -70 },
          { mac: '00:11:22:33:44:55', rssi: -42 },
        ],
      },
    ],
    ['gps-tracker', uplink(trackerFrame(0x7fffffff, 0, 0, []), 3), { position: null, accessPoints: [] }],
    [
      'prototype-methods',
      uplink('1a2b3c4d 0001e240 0190', 5),
      { serial: '1a2b3c4d', volumeM3: 123.456, flowLitresPerHour: 400 },
    ],
    [
      'sloppy-mode',
      uplink('0001 00ff 1000 ffff', 4),
      { channel1: 1, channel2: 255, channel3: 4096, channel4: 65535 },
    ],
    ['soil-moisture', uplink('1e 0172 ff9c', 10), { battery: 3, moisture: 37, soilTemperature: -10 }],
    ['number-or-string', uplink('1e02', 6), { battery: 3, presses: 2 }],
    ['number-or-string', uplink('1701', 6), { battery: '2.3(low battery)', presses: 1 }],
    ['keep-alive', uplink('', 1), {}],
  ])('decodes with %s the data the codec means, exactly', (name, frame, data) => {
    const sandbox = testSandbox();
    expect(sandbox.run(codec(name), [frame])).toEqual([{ ok: true, value: data }]);
  });

  it('carries doubles out at full precision', () => {
    const sandbox = testSandbox();
    const precise = inlineCodec(
      'def:test:precise',
      `function decodeUplink(input) {
        return { data: { sum: 0.1 + 0.2, pi: Math.PI, third: 1 / 3, tiny: Number.MIN_VALUE, big: 2 ** 53 + 2,
          fromInt32: ((input.bytes[0] << 24) | (input.bytes[1] << 16) | (input.bytes[2] << 8) | input.bytes[3]) / 1e7 } };
      }`,
    );
    const [outcome] = sandbox.run(precise, [uplink('c5d0 8e3b', 1)]);
    const value = (outcome?.ok ? outcome.value : {}) as Record<string, number>;
    const expected = { sum: 0.1 + 0.2, pi: Math.PI, third: 1 / 3, tiny: Number.MIN_VALUE, big: 2 ** 53 + 2 };
    for (const [key, number] of Object.entries(expected))
      expect(Object.is(value[key], number), key).toBe(true);
    expect(Object.is(value.fromInt32, Buffer.from('c5d08e3b', 'hex').readInt32BE() / 1e7)).toBe(true);
  });

  it('hands decodeUplink bytes as a plain Array of its own context, fPort, and recvTime as a Date', () => {
    const sandbox = testSandbox();
    const probe = inlineCodec(
      'def:test:probe',
      `const decodeUplink = (input) => ({
        data: {
          isArray: Array.isArray(input.bytes),
          instanceOfArray: input.bytes instanceof Array,
          isTypedArray: ArrayBuffer.isView(input.bytes),
          contextPrototype: Object.getPrototypeOf(input.bytes) === Array.prototype,
          bytes: input.bytes.slice(),
          pushed: input.bytes.push(7),
          fPort: input.fPort,
          isDate: input.recvTime instanceof Date,
          recvTimeMs: input.recvTime.getTime(),
          keys: Object.keys(input),
        },
      });`,
    );
    expect(sandbox.run(probe, [uplink('00 7f 80 ff', 42)])).toEqual([
      {
        ok: true,
        value: {
          isArray: true,
          instanceOfArray: true,
          isTypedArray: false,
          contextPrototype: true,
          bytes: [0, 127, 128, 255],
          pushed: 5,
          fPort: 42,
          isDate: true,
          recvTimeMs: RECEIVED_MS,
          keys: ['bytes', 'fPort', 'recvTime'],
        },
      },
    ]);
  });

  it("keeps each codec's changes to Object.prototype to itself, in the same environment", () => {
    const sandbox = testSandbox();
    const littleEndian = inlineCodec(
      'def:test:little-endian',
      `Object.prototype.uint16At = function (offset) { return this[offset] | (this[offset + 1] << 8); };
      function decodeUplink(input) {
        return { data: { flow: input.bytes.uint16At(0), hexAt: typeof ({}).hexAt } };
      }`,
    );
    const parser = inline(
      'def:test:plain',
      'function parsePayload() { return { uint16At: typeof ({}).uint16At, hexAt: typeof ({}).hexAt }; }',
    );
    const water = codec('prototype-methods');
    const frame = uplink('1a2b3c4d 0001e240 0190', 5);
    expect(sandbox.run(water, [frame])).toMatchObject([{ ok: true, value: { flowLitresPerHour: 400 } }]);
    expect(sandbox.run(littleEndian, [uplink('9001', 5)])).toEqual([
      { ok: true, value: { flow: 400, hexAt: 'undefined' } },
    ]);
    expect(sandbox.run(parser, [input('x')])).toEqual([
      { ok: true, value: { uint16At: 'undefined', hexAt: 'undefined' } },
    ]);
    expect(sandbox.run(water, [frame])).toMatchObject([{ ok: true, value: { flowLitresPerHour: 400 } }]);
    expect(sandbox.stats().isolates).toBe(1);
  });

  it('leaves built-ins writable, so a codec can replace them', () => {
    const sandbox = testSandbox();
    const replacer = inlineCodec(
      'def:test:replacer',
      `'use strict';
      Array.prototype.includes = function () { return 'mine'; };
      Object.defineProperty(Object.prototype, 'shout', { value() { return 'HI'; }, writable: true, configurable: true });
      function decodeUplink(input) { return { data: { includes: input.bytes.includes(1), shout: input.shout() } }; }`,
    );
    expect(sandbox.run(replacer, [uplink('01', 1)])).toEqual([
      { ok: true, value: { includes: 'mine', shout: 'HI' } },
    ]);
  });

  it('fails an uplink the codec returns errors for with PARSER_CODEC_ERRORS, its errors joined', () => {
    const sandbox = testSandbox();
    expect(sandbox.run(codec('soil-moisture'), [uplink('1e 0172 ff9c', 7), uplink('1e01', 10)])).toEqual([
      { ok: false, code: 'PARSER_CODEC_ERRORS', message: 'unknown fPort 7' },
      { ok: false, code: 'PARSER_CODEC_ERRORS', message: 'payload too short; expected 5 bytes, got 2' },
    ]);
  });

  it('writes errors that are not strings as console.log would, and clips a long message', () => {
    const sandbox = testSandbox();
    const odd = inlineCodec(
      'def:test:odd-errors',
      `function decodeUplink(input) {
        if (input.fPort === 1) return { data: { a: 1 }, errors: [{ code: 3 }, 42, null, 'plain'] };
        return { errors: ['x'.repeat(2000)] };
      }`,
    );
    const [mixed, long] = sandbox.run(odd, [uplink('', 1), uplink('', 2)]);
    expect(mixed).toEqual({ ok: false, code: 'PARSER_CODEC_ERRORS', message: '{"code":3}; 42; null; plain' });
    expect(long).toMatchObject({ ok: false, code: 'PARSER_CODEC_ERRORS' });
    expect(long?.ok === false && long.message.length).toBeLessThanOrEqual(501);
  });

  it('keeps warnings beside partial data, and leaves them out when there are none', () => {
    const sandbox = testSandbox();
    const outcomes = sandbox.run(codec('soil-moisture'), [
      uplink('17 0172 00c8', 10),
      uplink('1e 0172 00c8', 10),
    ]);
    expect(outcomes).toEqual([
      {
        ok: true,
        value: { battery: 2.3, soilTemperature: 20 },
        warnings: ['battery low (2.3 V): moisture not measured'],
      },
      { ok: true, value: { battery: 3, moisture: 37, soilTemperature: 20 } },
    ]);
  });

  it('turns warnings that are not strings into strings, and keeps at most 20', () => {
    const sandbox = testSandbox();
    const chatty = inlineCodec(
      'def:test:warnings',
      `function decodeUplink() {
        const warnings = [{ level: 2 }, 7];
        for (let i = 0; i < 50; i++) warnings.push('w' + i);
        return { warnings };
      }`,
    );
    const [outcome] = sandbox.run(chatty, [uplink('', 1)]);
    expect(outcome).toMatchObject({ ok: true, value: {} });
    expect(outcome?.ok && outcome.warnings?.slice(0, 3)).toEqual(['{"level":2}', '7', 'w0']);
    expect(outcome?.ok && outcome.warnings).toHaveLength(20);
  });

  it.each([
    ['a number', '42'],
    ['null', 'null'],
    ['an array', '[{ data: {} }]'],
    ['a string', "'done'"],
    ['a Promise', 'Promise.resolve({ data: {} })'],
    ['data that is an array', '{ data: [1, 2] }'],
    ['data that is null', '{ data: null }'],
    ['data that is a string', "{ data: 'x' }"],
    ['data that is a Date', '{ data: new Date(0) }'],
    ['data without a JSON form', '{ data: { n: 1n } }'],
    ['errors that are a string', "{ errors: 'bad' }"],
    ['warnings that are an object', '{ data: {}, warnings: { a: 1 } }'],
  ])('turns a result of %s into PARSER_BAD_RESULT', (_, result) => {
    const sandbox = testSandbox();
    const bad = inlineCodec('def:test:bad', `function decodeUplink() { return ${result}; }`);
    expect(codes(sandbox.run(bad, [uplink('', 1)]))).toEqual(['PARSER_BAD_RESULT']);
  });

  it('reads errors before anything else, and counts null fields as absent', () => {
    const sandbox = testSandbox();
    const early = inlineCodec(
      'def:test:early',
      `function decodeUplink(input) {
        return input.fPort === 1 ? { data: 'junk', warnings: 'junk', errors: ['no'] } : { data: { a: 1 }, warnings: null, errors: null };
      }`,
    );
    expect(sandbox.run(early, [uplink('', 1), uplink('', 2)])).toEqual([
      { ok: false, code: 'PARSER_CODEC_ERRORS', message: 'no' },
      { ok: true, value: { a: 1 } },
    ]);
  });

  it('fails with PARSER_ERROR when decodeUplink is missing, not a function, or throws', () => {
    const sandbox = testSandbox();
    const missing = inlineCodec('def:test:missing', 'function parsePayload() { return {}; }');
    const notAFunction = inlineCodec('def:test:not-a-function', 'var decodeUplink = { data: {} };');
    const throwing = inlineCodec(
      'def:test:throwing',
      'function decodeUplink(input) {\n  return input.nope.deeper;\n}',
    );
    const [absent] = sandbox.run(missing, [uplink('', 1)]);
    expect(absent).toMatchObject({ ok: false, code: 'PARSER_ERROR' });
    expect(absent?.ok === false && absent.message).toContain('decodeUplink is not defined');
    expect(codes(sandbox.run(notAFunction, [uplink('', 1)]))).toEqual(['PARSER_ERROR']);
    const [thrown] = sandbox.run(throwing, [uplink('', 1)]);
    expect(thrown).toMatchObject({ ok: false, code: 'PARSER_ERROR' });
    expect(thrown?.ok === false && thrown.message).toContain('def:test:throwing.js:2:21');
  });

  it('names decodeUplink when a codec runs out of time', () => {
    const sandbox = testSandbox();
    const looping = inlineCodec('def:test:looping', 'function decodeUplink() { for (;;) {} }');
    const [outcome] = sandbox.run(looping, [uplink('', 1)]);
    expect(outcome).toMatchObject({ ok: false, code: 'PARSER_TIMEOUT' });
    expect(outcome?.ok === false && outcome.message).toContain('decodeUplink');
  });

  it('fails only the bad uplinks of a mixed batch', () => {
    const sandbox = testSandbox();
    const picky = inlineCodec(
      'def:test:picky',
      `function decodeUplink(input) {
        if (input.fPort === 2) throw new Error('cannot decode');
        if (input.fPort === 3) return { errors: ['bad frame'] };
        if (input.fPort === 4) return 'junk';
        return { data: { first: input.bytes[0] }, warnings: input.fPort === 5 ? ['odd'] : [] };
      }`,
    );
    const outcomes = sandbox.run(picky, [
      uplink('01', 1),
      uplink('02', 2),
      uplink('03', 3),
      uplink('04', 4),
      uplink('05', 5),
      uplink('06', 1),
    ]);
    expect(codes(outcomes)).toEqual([
      'ok',
      'PARSER_ERROR',
      'PARSER_CODEC_ERRORS',
      'PARSER_BAD_RESULT',
      'ok',
      'ok',
    ]);
    expect(outcomes[4]).toEqual({ ok: true, value: { first: 5 }, warnings: ['odd'] });
    expect(outcomes[5]).toEqual({ ok: true, value: { first: 6 } });
    expect(sandbox.stats().isolateCalls).toBe(1);
  });

  it('returns console output of a codec beside its outcome', () => {
    const sandbox = testSandbox();
    const chatty = inlineCodec(
      'def:test:chatty-codec',
      "function decodeUplink(input) { console.log('port', input.fPort); return { data: {} }; }",
    );
    expect(sandbox.run(chatty, [uplink('', 9)])).toEqual([{ ok: true, value: {}, logs: ['port 9'] }]);
  });

  it('compiles the source afresh when the format of the same revision changes', () => {
    const sandbox = testSandbox();
    const both = inline(
      'def:test:both',
      'function parsePayload() { return { from: "parsePayload" }; }\nfunction decodeUplink() { return { data: { from: "decodeUplink" } }; }',
    );
    expect(sandbox.run(both, [input('x')])).toEqual([{ ok: true, value: { from: 'parsePayload' } }]);
    expect(sandbox.run({ ...both, format: 'ts013' }, [uplink('', 1)])).toEqual([
      { ok: true, value: { from: 'decodeUplink' } },
    ]);
    expect(sandbox.run(both, [input('x')])).toEqual([{ ok: true, value: { from: 'parsePayload' } }]);
    expect(sandbox.stats()).toMatchObject({ compiles: 3, cachedContexts: 1 });
  });

  it.each([
    ['a payload for a codec', codec('keep-alive'), input('x')],
    ['an uplink for a parsePayload parser', fixture('valid-json'), uplink('', 1)],
    ['bytesHex that are not hex', codec('keep-alive'), uplink('0g', 1)],
    ['bytesHex of an odd length', codec('keep-alive'), uplink('abc', 1)],
    ['an fPort over 255', codec('keep-alive'), uplink('', 256)],
    ['an fPort that is not an integer', codec('keep-alive'), uplink('', 1.5)],
    ['a recvTimeMs that is not a number', codec('keep-alive'), uplink('', 1, Number.NaN)],
  ])('refuses %s as the caller’s mistake (INTERNAL), running nothing', (_, code, wrong) => {
    const sandbox = testSandbox();
    let thrown: unknown;
    try {
      sandbox.run(code, [wrong]);
    } catch (err) {
      thrown = err;
    }
    expect(isAppError(thrown) && thrown.code).toBe('INTERNAL');
    expect(sandbox.stats().isolateCalls).toBe(0);
  });

  it('splits a batch of uplinks by the size of their bytes', () => {
    const frames = [uplink('00'.repeat(100), 1), uplink('00'.repeat(100), 1), uplink('00'.repeat(100), 1)];
    expect(chunksBySize(frames, 500).map((chunk) => chunk.length)).toEqual([2, 1]);
    expect(chunksBySize([uplink('', 1), uplink('', 1)], 60).map((chunk) => chunk.length)).toEqual([1, 1]);
  });
});

describe('checkSyntax of a codec', () => {
  it('looks for decodeUplink instead of parsePayload', () => {
    expect(checkSyntax(codec('gps-tracker').source, 'gps-tracker.js', 'ts013')).toEqual({ ok: true });
    expect(checkSyntax('function parsePayload() {}', 'p.js', 'ts013').ok).toBe(false);
    expect(checkSyntax(codec('gps-tracker').source, 'gps-tracker.js').ok).toBe(false);
  });
});
