import { describe, expect, it } from 'vitest';
import { checkSyntax } from '../../../src/sandbox/check-syntax.ts';
import { fixture, inline, input, testSandbox } from './parser-fixtures.ts';

const reading = { temperature: 21.5, humidity: 40 };

describe('sandbox with well-behaved parsers', () => {
  it('turns a JSON payload into data point values', () => {
    const sandbox = testSandbox();
    expect(sandbox.run(fixture('valid-json'), [input(reading)], { expectObject: true })).toEqual([
      { ok: true, value: { Temperature: 21.5, Humidity: 40 } },
    ]);
  });

  it('decodes a hex payload, negative temperatures included', () => {
    const sandbox = testSandbox();
    const outcomes = sandbox.run(fixture('hex-raw'), [input('00eb8ca5'), input('ff9c8ca5')]);
    expect(outcomes).toEqual([
      { ok: true, value: { Temperature: 23.5, Humidity: 70, Battery: 3300 } },
      { ok: true, value: { Temperature: -10, Humidity: 70, Battery: 3300 } },
    ]);
  });

  it('passes payloadRaw as the second argument, and payloadStr when both are the same', () => {
    const sandbox = testSandbox();
    const echo = inline('def:test:echo', 'function parsePayload(s, r) { return { s, r }; }');
    expect(
      sandbox.run(echo, [
        { payloadStr: '{"a":1}', payloadRaw: 'raw bytes' },
        { payloadStr: 'same', payloadRaw: 'same' },
      ]),
    ).toEqual([
      { ok: true, value: { s: '{"a":1}', r: 'raw bytes' } },
      { ok: true, value: { s: 'same', r: 'same' } },
    ]);
  });

  it('splits one upload into timestamped items with the §5 pre-parser example', () => {
    const sandbox = testSandbox();
    const upload = {
      devEUI: 'device_3_reception',
      measurements: [
        { temperature: 22.5, humidity: 45.2, timestampInMs: 1727085443874 },
        { temperature: 22.6, humidity: 45.0, timestampInMs: 1727085503874 },
        { temperature: 22.8, humidity: 44.9, timestampInMs: 1727085563874 },
      ],
    };
    const [outcome] = sandbox.run(fixture('preparser-split', { id: 'pre:demo' }), [input(upload)]);
    expect(outcome).toEqual({
      ok: true,
      value: upload.measurements.map((m) => ({
        deviceName: 'device_3_reception',
        time: m.timestampInMs,
        payload: { Temperature: m.temperature, Humidity: m.humidity },
      })),
    });
  });

  it('keeps unknown keys and drops values JSON cannot carry', () => {
    const sandbox = testSandbox();
    expect(sandbox.run(fixture('extra-keys'), [input('{}')], { expectObject: true })).toEqual([
      { ok: true, value: { Temperature: 21.5, NotADataPoint: 7, nested: { depth: 1 } } },
    ]);
  });

  it('returns keys named like Object.prototype members as own keys, the host prototypes untouched', () => {
    const sandbox = testSandbox();
    const echo = inline('def:test:special', 'function parsePayload(s) { return JSON.parse(s); }');
    const text = '{"__proto__":{"polluted":1},"constructor":2,"toString":3,"prototype":4}';
    const [outcome] = sandbox.run(echo, [input(text)], { expectObject: true });
    const value = (outcome?.ok ? outcome.value : undefined) as Record<string, unknown>;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(Object.keys(value)).toEqual(['__proto__', 'constructor', 'toString', 'prototype']);
    expect(Object.getOwnPropertyDescriptor(value, '__proto__')?.value).toEqual({ polluted: 1 });
    expect(value.constructor).toBe(2);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('accepts parsePayload declared with const and an arrow function', () => {
    const sandbox = testSandbox();
    const arrow = inline('def:test:arrow', 'const parsePayload = (s) => ({ length: s.length });');
    expect(sandbox.run(arrow, [input('abcd')])).toEqual([{ ok: true, value: { length: 4 } }]);
  });

  it('returns bounded console output beside the outcome', () => {
    const sandbox = testSandbox();
    const chatty = inline(
      'def:test:chatty',
      `function parsePayload(s) {
        console.log('got', s, { n: 1 });
        for (let i = 0; i < 100; i++) console.warn('x'.repeat(1000));
        return {};
      }`,
    );
    const [outcome] = sandbox.run(chatty, [input('p')]);
    expect(outcome?.ok).toBe(true);
    expect(outcome?.logs?.[0]).toBe('got p {"n":1}');
    expect(outcome?.logs).toHaveLength(20);
    expect(outcome?.logs?.[1]?.length).toBeLessThanOrEqual(201);
    const [quiet] = sandbox.run(fixture('valid-json'), [input(reading)]);
    expect(quiet).not.toHaveProperty('logs');
  });
});

describe('sandbox with broken or hostile parsers', () => {
  it('reports a thrown error with line:column of the user file, and its console output', () => {
    const sandbox = testSandbox();
    const [outcome] = sandbox.run(fixture('throws'), [input(reading)]);
    expect(outcome).toMatchObject({ ok: false, code: 'PARSER_ERROR' });
    expect(outcome?.ok === false && outcome.message).toContain('throws.js:4:9');
    expect(outcome?.logs).toEqual(['about to fail on {"temperature":21.5,"humidity":40}']);
  });

  it('reports a syntax error with the line:column of the user file, unshifted by the harness', () => {
    const sandbox = testSandbox();
    const outcomes = sandbox.run(fixture('syntax-error'), [input(reading), input(reading)]);
    for (const outcome of outcomes) {
      expect(outcome).toMatchObject({ ok: false, code: 'PARSER_ERROR' });
      expect(outcome.ok === false && outcome.message).toContain('syntax-error.js:5:40');
    }
    expect(sandbox.stats().compiles).toBe(1);
  });

  it('fails with "parsePayload is not defined" when the source does not define it', () => {
    const sandbox = testSandbox();
    const [outcome] = sandbox.run(inline('def:test:none', 'function parse(s) { return {}; }'), [input('x')]);
    expect(outcome).toMatchObject({ ok: false, code: 'PARSER_ERROR' });
    expect(outcome?.ok === false && outcome.message).toContain('parsePayload is not defined');
  });

  it('fails a parser whose top-level code throws or loops, with the right code', () => {
    const sandbox = testSandbox();
    const throwing = inline('def:test:top-throw', 'const x = 1;\nnull.boom;\nfunction parsePayload() {}');
    const [thrown] = sandbox.run(throwing, [input('x')]);
    expect(thrown).toMatchObject({ ok: false, code: 'PARSER_ERROR' });
    expect(thrown?.ok === false && thrown.message).toContain('def:test:top-throw.js:2:6');
    const looping = inline('def:test:top-loop', 'for (;;) {}\nfunction parsePayload() {}');
    expect(sandbox.run(looping, [input('x')])).toMatchObject([{ ok: false, code: 'PARSER_TIMEOUT' }]);
  });

  it.each([
    ['number', true],
    ['array', true],
    ['null', true],
    ['string', true],
    ['date', true],
    ['undefined', false],
    ['function', false],
    ['promise', false],
    ['bigint', false],
    ['circular', false],
  ])('treats a result of kind %s as PARSER_BAD_RESULT (for a pre-parser too: %s → no)', (kind, jsonable) => {
    const sandbox = testSandbox();
    const payload = input({ kind });
    const [definition] = sandbox.run(fixture('non-object'), [payload], { expectObject: true });
    expect(definition).toMatchObject({ ok: false, code: 'PARSER_BAD_RESULT' });
    const [pre] = sandbox.run(fixture('non-object'), [payload]);
    expect(pre?.ok).toBe(jsonable);
  });

  it('leaves the shape of a pre-parser result to the domain', () => {
    const sandbox = testSandbox();
    const outcomes = sandbox.run(fixture('non-object'), [
      input({ kind: 'number' }),
      input({ kind: 'array' }),
    ]);
    expect(outcomes).toEqual([
      { ok: true, value: 42 },
      { ok: true, value: [1, 2, 3] },
    ]);
  });

  it('offers no require, process, timers, network or host globals', () => {
    const sandbox = testSandbox();
    const [outcome] = sandbox.run(fixture('touches-process'), [input('{}')]);
    if (outcome?.ok !== true) throw new Error(`expected the probe to run: ${JSON.stringify(outcome)}`);
    const found = outcome.value as Record<string, string>;
    for (const name of [
      'process',
      'require',
      'module',
      'exports',
      'Buffer',
      'global',
      'fetch',
      'WebAssembly',
    ]) {
      expect(found[name], name).toBe('undefined');
    }
    for (const name of ['setTimeout', 'setInterval', 'setImmediate', 'queueMicrotask', 'clearTimeout']) {
      expect(found[name], name).toBe('undefined');
    }
    expect(found.callSetTimeout).toBe('throws ReferenceError');
    expect(found.constructorEscape).toBe('undefined');
    expect(found.thisEscape).toBe('undefined');
    expect(found.errorEscape).toBe('undefined');
    expect(found.dateNow).toBe('number');
    expect(found.globals?.split(',')).toEqual(expect.arrayContaining(['JSON', 'Math', 'Date', 'console']));
  });

  it('turns deep recursion into PARSER_ERROR RangeError', () => {
    // Overflowing the stack takes tens of ms on a loaded machine: give it time, so that the
    // stack overflow, not the CPU limit, is what stops it.
    const sandbox = testSandbox({ timeoutMs: 3000 });
    const [outcome] = sandbox.run(fixture('recursion'), [input('{}')]);
    expect(outcome).toMatchObject({ ok: false, code: 'PARSER_ERROR' });
    expect(outcome?.ok === false && outcome.message).toMatch(/^RangeError: .*recursion\.js:3:3/);
  });

  it('refuses a result over maxResultBytes and accepts it under a larger limit', () => {
    // Building and copying 2 MB takes a loaded machine more than the default 50 ms: this is about size.
    expect(testSandbox({ timeoutMs: 1000 }).run(fixture('giant-result'), [input('{}')])).toMatchObject([
      { ok: false, code: 'PARSER_BAD_RESULT' },
    ]);
    const roomy = testSandbox({ timeoutMs: 1000, maxResultBytes: 4 * 1024 * 1024 });
    expect(roomy.run(fixture('giant-result'), [input('{}')])).toMatchObject([{ ok: true }]);
  });

  it('fails only the input whose parser schedules an endless promise job', () => {
    const sandbox = testSandbox({ maxBatchTimeoutMs: 100 });
    const sneaky = inline(
      'def:test:microtask',
      `function parsePayload(s) {
        if (s === 'sneak') Promise.resolve().then(() => { for (;;) {} });
        return { s };
      }`,
    );
    const outcomes = sandbox.run(sneaky, [input('a'), input('sneak'), input('b')]);
    expect(outcomes.map((o) => (o.ok ? 'ok' : o.code))).toEqual(['ok', 'PARSER_TIMEOUT', 'ok']);
  });

  it('interrupts a parser blocked in Atomics.wait with PARSER_TIMEOUT', () => {
    const sandbox = testSandbox();
    const blocking = inline(
      'def:test:atomics',
      'function parsePayload() { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0); return {}; }',
    );
    expect(sandbox.run(blocking, [input('x')])).toMatchObject([{ ok: false, code: 'PARSER_TIMEOUT' }]);
  });

  it.each([
    'throws',
    'syntax-error',
    'loops',
    'allocates',
    'non-object',
    'touches-process',
    'recursion',
    'giant-result',
  ])('processes the next good payload in the same sandbox after %s', (name) => {
    const sandbox = testSandbox();
    sandbox.run(fixture(name), [input({ loop: true, allocate: true, kind: 'array' })], {
      expectObject: true,
    });
    expect(sandbox.run(fixture('valid-json'), [input(reading)])).toEqual([
      { ok: true, value: { Temperature: 21.5, Humidity: 40 } },
    ]);
  });
});

describe('checkSyntax', () => {
  it('accepts a parser that compiles', () => {
    expect(checkSyntax(fixture('valid-json').source, 'valid-json.js')).toEqual({ ok: true });
  });

  it('reports a syntax error with line:column without running the code', () => {
    const result = checkSyntax(fixture('syntax-error').source, 'syntax-error.js');
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toContain('syntax-error.js:5:40');
    expect(checkSyntax('for (;;) {}\nfunction parsePayload() {}', 'loop.js')).toEqual({ ok: true });
  });

  it('refuses a source that never mentions parsePayload', () => {
    const result = checkSyntax('function parse() { return {}; }', 'nameless.js');
    expect(result.ok).toBe(false);
    expect(!result.ok && result.message).toContain('parsePayload');
  });
});
