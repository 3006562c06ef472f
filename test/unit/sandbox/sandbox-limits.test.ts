import { describe, expect, it } from 'vitest';
import { AppError } from '../../../src/errors/app-error.ts';
import { createSandbox } from '../../../src/sandbox/sandbox.ts';
import { fixture, inline, input, silentLog, testSandbox } from './parser-fixtures.ts';

const codes = (outcomes: { ok: boolean; code?: string }[]) => outcomes.map((o) => (o.ok ? 'ok' : o.code));

function readings(count: number, special: { at: number; body: object }) {
  return Array.from({ length: count }, (_, i) =>
    input(i === special.at ? special.body : { temperature: i, humidity: 50 }),
  );
}

describe('sandbox limits', () => {
  it('fails only the looping input of a batch of 100 with PARSER_TIMEOUT', () => {
    const sandbox = testSandbox({ timeoutMs: 20, maxBatchTimeoutMs: 200 });
    const outcomes = sandbox.run(fixture('loops'), readings(100, { at: 37, body: { loop: true } }));
    expect(outcomes.filter((o) => o.ok)).toHaveLength(99);
    expect(outcomes[37]).toMatchObject({ ok: false, code: 'PARSER_TIMEOUT' });
    expect(outcomes[99]).toEqual({ ok: true, value: { Temperature: 99, Humidity: 50 } });
    expect(sandbox.stats()).toMatchObject({ batchFallbacks: 1, failures: { PARSER_TIMEOUT: 1 } });
  });

  it('fails only the memory bomb with PARSER_MEMORY, replaces the isolate and carries on', () => {
    // A generous time limit, so that the memory limit is what stops the bomb even on a busy machine.
    const sandbox = testSandbox({ timeoutMs: 3000 });
    const other = inline('def:test:other', 'function parsePayload(s) { return { s }; }');
    expect(sandbox.run(other, [input('before')])).toMatchObject([{ ok: true }]);
    const outcomes = sandbox.run(fixture('allocates'), readings(10, { at: 4, body: { allocate: true } }));
    expect(codes(outcomes)).toEqual(['ok', 'ok', 'ok', 'ok', 'PARSER_MEMORY', 'ok', 'ok', 'ok', 'ok', 'ok']);
    expect(sandbox.stats().isolateRestarts).toBeGreaterThanOrEqual(1);
    // Contexts of the old isolate are recompiled on their next use.
    expect(sandbox.run(other, [input('after')])).toEqual([{ ok: true, value: { s: 'after' } }]);
    expect(sandbox.run(fixture('allocates'), [input({ allocate: true })])).toMatchObject([
      { ok: false, code: 'PARSER_MEMORY' },
    ]);
    expect(sandbox.run(fixture('valid-json'), [input({ temperature: 1, humidity: 2 })])).toMatchObject([
      { ok: true },
    ]);
  });

  it('reports a parser whose top-level code exhausts memory as PARSER_MEMORY and retries it later', () => {
    const sandbox = testSandbox({ timeoutMs: 3000 });
    const hoarder = inline(
      'def:test:top-hoard',
      'const hoard = [];\nfor (;;) hoard.push(new Array(1000000).fill(0));\nfunction parsePayload() {}',
    );
    expect(sandbox.run(hoarder, [input('x')])).toMatchObject([{ ok: false, code: 'PARSER_MEMORY' }]);
    expect(sandbox.stats()).toMatchObject({ isolateRestarts: 1, cachedContexts: 0 });
    expect(sandbox.run(fixture('valid-json'), [input({ temperature: 3 })])).toMatchObject([{ ok: true }]);
  });

  it('picks up a new revision without a restart and drops the old context', () => {
    const sandbox = testSandbox();
    const v1 = inline('def:test:versioned', 'function parsePayload() { return { version: 1 }; }', 1);
    const v2 = inline('def:test:versioned', 'function parsePayload() { return { version: 2 }; }', 2);
    expect(sandbox.run(v1, [input('x')])).toEqual([{ ok: true, value: { version: 1 } }]);
    expect(sandbox.run(v1, [input('x')])).toEqual([{ ok: true, value: { version: 1 } }]);
    expect(sandbox.run(v2, [input('x')])).toEqual([{ ok: true, value: { version: 2 } }]);
    expect(sandbox.stats()).toMatchObject({ compiles: 2, cachedContexts: 1 });
  });

  it('keeps globals and prototype changes of one parser id invisible to another', () => {
    const sandbox = testSandbox();
    const envA = fixture('global-state', { id: 'pre:env-a' });
    const envB = fixture('global-state', { id: 'pre:env-b' });
    expect(sandbox.run(envA, [input({ set: 'A' })])).toEqual([
      { ok: true, value: { secret: 'A', polluted: 'A', calls: 1 } },
    ]);
    expect(sandbox.run(envB, [input({})])).toEqual([
      { ok: true, value: { secret: null, polluted: null, calls: 1 } },
    ]);
    // Within one id, state persists between calls (documented: parsers should not rely on it).
    expect(sandbox.run(envA, [input({})])).toEqual([
      { ok: true, value: { secret: 'A', polluted: 'A', calls: 2 } },
    ]);
  });

  it('evicts the least recently used context beyond maxContexts and recompiles it on demand', () => {
    const sandbox = testSandbox({ maxContexts: 2 });
    const parsers = ['a', 'b', 'c'].map((name) =>
      inline(`def:test:${name}`, `function parsePayload() { return { name: '${name}' }; }`),
    );
    for (const parser of [...parsers, ...parsers]) {
      expect(sandbox.run(parser, [input('x')])).toMatchObject([{ ok: true }]);
    }
    expect(sandbox.stats()).toMatchObject({ cachedContexts: 2, compiles: 6 });
  });

  it('counts calls, inputs and failures by code', () => {
    const sandbox = testSandbox();
    sandbox.run(fixture('valid-json'), [input({ temperature: 1 }), input('not json')]);
    sandbox.run(fixture('non-object'), [input({ kind: 'number' })], { expectObject: true });
    expect(sandbox.run(fixture('valid-json'), [])).toEqual([]);
    expect(sandbox.stats()).toEqual({
      calls: 2,
      isolateCalls: 2,
      inputs: 3,
      failures: {
        PARSER_TIMEOUT: 0,
        PARSER_MEMORY: 0,
        PARSER_ERROR: 1,
        PARSER_BAD_RESULT: 1,
        PARSER_CODEC_ERRORS: 0,
      },
      batchFallbacks: 0,
      isolateRestarts: 0,
      compiles: 2,
      cachedContexts: 2,
      isolates: 1,
      isolatesCreated: 1,
      isolatesDropped: 0,
    });
  });

  it('splits a batch whose payloads would crowd the isolate heap into several calls', () => {
    const sandbox = testSandbox({ timeoutMs: 1000 });
    const big = 'x'.repeat(300_000);
    const inputs = Array.from({ length: 20 }, (_, i) => ({ payloadStr: `${i}`, payloadRaw: big }));
    const length = inline(
      'def:test:length',
      'function parsePayload(s, r) { return { n: Number(s), size: r.length }; }',
    );
    const outcomes = sandbox.run(length, inputs);
    expect(outcomes).toEqual(inputs.map((_, n) => ({ ok: true, value: { n, size: 300_000 } })));
    // How many calls the batch became depends on the heap budget; that it was split does not.
    expect(sandbox.stats()).toMatchObject({ calls: 1, batchFallbacks: 0 });
    expect(sandbox.stats().isolateCalls).toBeGreaterThan(1);
  });

  it('closes safely twice and refuses work afterwards', () => {
    const sandbox = createSandbox({ timeoutMs: 50, memoryLimitMb: 32, log: silentLog });
    sandbox.run(fixture('valid-json'), [input({ temperature: 1 })]);
    sandbox.close();
    sandbox.close();
    expect(() => sandbox.run(fixture('valid-json'), [input({ temperature: 1 })])).toThrow(AppError);
  });

  it('parses a steady stream of batches (timing logged, not asserted)', () => {
    const sandbox = testSandbox();
    const code = fixture('valid-json');
    const batch = readings(200, { at: -1, body: {} });
    sandbox.run(code, batch);
    const batches = 50;
    const started = process.hrtime.bigint();
    for (let i = 0; i < batches; i++) sandbox.run(code, batch, { expectObject: true });
    const elapsedUs = Number(process.hrtime.bigint() - started) / 1000;
    console.log(
      `sandbox: ${(elapsedUs / (batches * batch.length)).toFixed(2)} µs per payload, ` +
        `${(elapsedUs / batches).toFixed(0)} µs per batch of ${batch.length}`,
    );
    expect(sandbox.stats().failures.PARSER_ERROR).toBe(0);
  });
});
