import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { ParseOutcome, Sandbox } from '../../../src/sandbox/sandbox.ts';
import { inline, inlineCodec, input, testSandbox, uplink } from './parser-fixtures.ts';

/**
 * A parser that evaluates each payload as an expression (in a function, so it sees the context's
 * globals) and answers `{value}`, or `{error: name}` when it throws: the helpers' answers, read from
 * the outside. `prelude` runs at the top level first.
 */
function evaluator(prelude = '') {
  return inline(
    `def:test:eval:${prelude.length}`,
    `${prelude}
    function parsePayload(expression) {
      try {
        return { value: Function('return (' + expression + ');')() };
      } catch (err) {
        return { error: err.name };
      }
    }`,
  );
}

function evaluate(sandbox: Sandbox, expressions: string[], prelude = ''): unknown[] {
  return sandbox
    .run(evaluator(prelude), expressions.map(input))
    .map((o: ParseOutcome) => (o.ok ? o.value : o.code));
}

const quote = (text: string) => JSON.stringify(text);
const ALL_BYTES = Array.from({ length: 256 }, (_, i) => i);
const binaryOf = (bytes: number[]) => String.fromCharCode(...bytes);

describe('atob and btoa', () => {
  it('decode and encode as the web does, for every byte and every padding', () => {
    const sandbox = testSandbox();
    for (const bytes of [[], [0], [0, 255], [1, 2, 3], [250, 251, 252, 253], ALL_BYTES]) {
      const binary = binaryOf(bytes);
      const base64 = Buffer.from(bytes).toString('base64');
      expect(evaluate(sandbox, [`btoa(${quote(binary)})`, `atob(${quote(base64)})`])).toEqual([
        { value: base64 },
        { value: binary },
      ]);
    }
  });

  it('answer what Node’s own atob answers, InvalidCharacterError included', () => {
    const sandbox = testSandbox();
    const samples = fc.sample(
      fc.string({ unit: fc.constantFrom(...'ABab09+/=  \n\t-_%é'.split('')), maxLength: 12 }),
      {
        numRuns: 300,
        seed: 13,
      },
    );
    const host = (text: string) => {
      try {
        return { value: atob(text) };
      } catch (err) {
        return { error: (err as Error).name };
      }
    };
    expect(
      evaluate(
        sandbox,
        samples.map((text) => `atob(${quote(text)})`),
      ),
    ).toEqual(samples.map(host));
  });

  it('refuse what browsers refuse', () => {
    const sandbox = testSandbox();
    expect(evaluate(sandbox, ['atob("a")', 'atob("ab=c")', 'atob("ab===")', 'btoa("€")', 'atob()'])).toEqual([
      { error: 'InvalidCharacterError' },
      { error: 'InvalidCharacterError' },
      { error: 'InvalidCharacterError' },
      { error: 'InvalidCharacterError' },
      { error: 'TypeError' },
    ]);
  });
});

describe('base64ToBytes and bytesToBase64', () => {
  it('round-trip any bytes, as Node encodes them', () => {
    const sandbox = testSandbox();
    const samples = fc.sample(fc.uint8Array({ maxLength: 40 }), { numRuns: 100, seed: 7 });
    const expressions = samples.map((bytes) => `bytesToBase64(${JSON.stringify([...bytes])})`);
    expect(evaluate(sandbox, expressions)).toEqual(
      samples.map((b) => ({ value: Buffer.from(b).toString('base64') })),
    );
    const back = samples.map((bytes) => `base64ToBytes(${quote(Buffer.from(bytes).toString('base64'))})`);
    expect(evaluate(sandbox, back)).toEqual(samples.map((bytes) => ({ value: [...bytes] })));
  });

  it('read the URL-safe alphabet, whitespace and missing padding too', () => {
    const sandbox = testSandbox();
    expect(
      evaluate(sandbox, ['base64ToBytes("-_8")', 'base64ToBytes(" +/8= ")', 'base64ToBytes("AQID\\nBA")']),
    ).toEqual([{ value: [251, 255] }, { value: [251, 255] }, { value: [1, 2, 3, 4] }]);
  });

  it('refuse text that is not base64, and values that are not bytes', () => {
    const sandbox = testSandbox();
    expect(
      evaluate(sandbox, [
        'base64ToBytes("ab%d")',
        'base64ToBytes("a")',
        'base64ToBytes(42)',
        'bytesToBase64([1, 256])',
        'bytesToBase64([1.5])',
        'bytesToBase64(["1"])',
        'bytesToBase64("abc")',
        'bytesToBase64(null)',
      ]),
    ).toEqual([
      { error: 'SyntaxError' },
      { error: 'SyntaxError' },
      { error: 'TypeError' },
      { error: 'RangeError' },
      { error: 'RangeError' },
      { error: 'RangeError' },
      { error: 'TypeError' },
      { error: 'TypeError' },
    ]);
  });
});

describe('hexToBytes and bytesToHex', () => {
  it('round-trip every byte, in lowercase, reading either case and whitespace', () => {
    const sandbox = testSandbox();
    const hex = Buffer.from(ALL_BYTES).toString('hex');
    expect(
      evaluate(sandbox, [
        `bytesToHex(${JSON.stringify(ALL_BYTES)})`,
        `hexToBytes(${quote(hex.toUpperCase())})`,
        'hexToBytes("01 a2\\tFF\\n")',
        'hexToBytes("")',
        'bytesToHex(new Uint8Array([0, 15, 16]))',
      ]),
    ).toEqual([
      { value: hex },
      { value: ALL_BYTES },
      { value: [1, 162, 255] },
      { value: [] },
      { value: '000f10' },
    ]);
  });

  it('refuse an odd number of digits, characters that are not hex, and values that are not bytes', () => {
    const sandbox = testSandbox();
    expect(
      evaluate(sandbox, [
        'hexToBytes("abc")',
        'hexToBytes("0x12")',
        'hexToBytes([1])',
        'bytesToHex([-1])',
        'bytesToHex(7)',
      ]),
    ).toEqual([
      { error: 'SyntaxError' },
      { error: 'SyntaxError' },
      { error: 'TypeError' },
      { error: 'RangeError' },
      { error: 'TypeError' },
    ]);
  });
});

describe('the helpers in every context', () => {
  it('return plain Arrays of the context', () => {
    const sandbox = testSandbox();
    const check = (call: string) =>
      `(() => { const a = ${call}; return Array.isArray(a) && a instanceof Array && Object.getPrototypeOf(a) === Array.prototype; })()`;
    expect(evaluate(sandbox, [check('hexToBytes("0102")'), check('base64ToBytes("AQI=")')])).toEqual([
      { value: true },
      { value: true },
    ]);
  });

  it('keep working after user code overwrote the built-ins they might use', () => {
    const sandbox = testSandbox();
    const vandal = `
      String.fromCharCode = () => 'x';
      String.prototype.charCodeAt = () => 0;
      String.prototype.slice = () => '';
      Array.prototype.push = () => 0;
      Array.prototype.join = () => '';
      Function.prototype.call = () => 0;
      Function.prototype.bind = () => 0;
      Function.prototype.apply = () => 0;
      Number.isInteger = () => false;
      Object.defineProperty = () => ({});
      JSON.stringify = () => '"spoiled"';`;
    expect(
      evaluate(
        sandbox,
        [
          'atob("aGk=")',
          'btoa("hi")',
          'hexToBytes("0aff")',
          'bytesToHex([10, 255])',
          'base64ToBytes("Cv8=")',
          'bytesToBase64([10, 255])',
        ],
        vandal,
      ),
    ).toEqual([
      { value: 'hi' },
      { value: 'aGk=' },
      { value: [10, 255] },
      { value: '0aff' },
      { value: [10, 255] },
      { value: 'Cv8=' },
    ]);
  });

  it('are there for pre-parsers and codecs, and a file may define its own of the same name', () => {
    const sandbox = testSandbox();
    const preparser = inline('pre:test', 'function parsePayload(s) { return { bytes: hexToBytes(s) }; }');
    expect(sandbox.run(preparser, [input('0102')])).toEqual([{ ok: true, value: { bytes: [1, 2] } }]);
    const codec = inlineCodec(
      'def:test:helpers',
      'function decodeUplink(input) { return { data: { hex: bytesToHex(input.bytes), base64: bytesToBase64(input.bytes) } }; }',
    );
    expect(sandbox.run(codec, [uplink('0aff', 1)])).toEqual([
      { ok: true, value: { hex: '0aff', base64: 'Cv8=' } },
    ]);
    const own = inlineCodec(
      'def:test:own-helpers',
      `function hexToBytes() { return 'mine'; }
      const bytesToHex = () => 'mine too';
      var atob = 1;
      function decodeUplink() { return { data: { a: hexToBytes(), b: bytesToHex(), c: atob, d: typeof btoa } }; }`,
    );
    expect(sandbox.run(own, [uplink('', 1)])).toEqual([
      { ok: true, value: { a: 'mine', b: 'mine too', c: 1, d: 'function' } },
    ]);
  });
});
