/**
 * One isolate per environment, bounded: an environment's parsers never share a heap or globals with
 * another's; idle isolates and the least recently used beyond the bound are disposed and rebuilt on
 * use; a memory failure replaces only its environment's isolate; parser time is kept per environment.
 */
import { describe, expect, it } from 'vitest';
import { fixture, inline, input, testSandbox } from './parser-fixtures.ts';

/** Counts its calls in a global: a count back at 1 means the context was built afresh. */
const counter = (env: string) =>
  inline('def:private:counter', 'var n = 0; function parsePayload() { return { n: ++n }; }', 1, env);
const calls = (outcomes: unknown) => (outcomes as [{ value: { n: number } }])[0].value.n;

/** Keeps 1 MiB per payload in a global, as a hostile parser may. */
const HOARDER =
  'var hoard = []; function parsePayload(s) { hoard.push(new Float64Array(131072)); return { x: 1 }; }';

/** Runs about `ms` of CPU per payload. */
const busy = (env: string, ms: number) =>
  inline(
    'def:private:busy',
    `function parsePayload() { const end = Date.now() + ${ms}; while (Date.now() < end); return {}; }`,
    1,
    env,
  );

describe('isolates per environment', () => {
  it("drops an environment's isolate after isolateIdleMs unused and rebuilds it on its next payload", () => {
    let nowMs = 1_000_000;
    const sandbox = testSandbox({ isolateIdleMs: 60_000, clock: () => nowMs });
    expect(calls(sandbox.run(counter('a'), [input('x')]))).toBe(1);
    expect(calls(sandbox.run(counter('b'), [input('x')]))).toBe(1);
    nowMs += 30_000;
    expect(calls(sandbox.run(counter('b'), [input('x')]))).toBe(2);
    nowMs += 45_000;
    // a was last used 75 s ago, b 45 s ago: a's isolate goes on this look, b's stays.
    expect(calls(sandbox.run(counter('c'), [input('x')]))).toBe(1);
    expect(sandbox.stats()).toMatchObject({ isolates: 2, isolatesCreated: 3, isolatesDropped: 1 });
    expect(sandbox.stats('a')).toMatchObject({ isolates: 0, isolatesDropped: 1 });
    expect(calls(sandbox.run(counter('b'), [input('x')]))).toBe(3);
    expect(calls(sandbox.run(counter('a'), [input('x')]))).toBe(1);
    expect(sandbox.stats('a')).toMatchObject({ isolates: 1, isolatesCreated: 2, compiles: 2 });
  });

  it('disposes the least recently used isolate beyond maxIsolates, failing no payload', () => {
    const sandbox = testSandbox({ maxIsolates: 2 });
    for (const env of ['a', 'b']) expect(calls(sandbox.run(counter(env), [input('x')]))).toBe(1);
    expect(calls(sandbox.run(counter('a'), [input('x')]))).toBe(2);
    // c needs room: b is the least recently used.
    expect(calls(sandbox.run(counter('c'), [input('x')]))).toBe(1);
    expect(sandbox.stats()).toMatchObject({ isolates: 2, isolatesDropped: 1 });
    expect(calls(sandbox.run(counter('a'), [input('x')]))).toBe(3);
    expect(calls(sandbox.run(counter('b'), [input('x')]))).toBe(1);
    expect(sandbox.stats()).toMatchObject({ isolates: 2, isolatesCreated: 4, isolatesDropped: 2 });
  });

  it('replaces only the isolate of the environment whose parser went over the memory limit', () => {
    // A generous time limit, so that the memory limit is what stops the bomb even on a busy machine.
    const sandbox = testSandbox({ timeoutMs: 3000 });
    expect(calls(sandbox.run(counter('victim'), [input('x')]))).toBe(1);
    const bomb = fixture('allocates', { env: 'evil' });
    expect(sandbox.run(bomb, [input({ allocate: true })])).toMatchObject([
      { ok: false, code: 'PARSER_MEMORY' },
    ]);
    expect(sandbox.stats('evil')).toMatchObject({ isolateRestarts: 1 });
    expect(sandbox.stats('victim')).toMatchObject({ isolateRestarts: 0, isolates: 1 });
    // The victim's context, with its globals, is still there.
    expect(calls(sandbox.run(counter('victim'), [input('x')]))).toBe(2);
    expect(sandbox.run(bomb, [input({ temperature: 20 })])).toMatchObject([{ ok: true }]);
  });

  it("runs an environment's parsers, new ones included, while another's parser holds a full heap", () => {
    const sandbox = testSandbox();
    const hoarder = inline('def:private:hoarder', HOARDER, 1, 'evil');
    const failures = Array.from({ length: 40 }, () => sandbox.run(hoarder, [input('x')])[0]).filter(
      (o) => !o?.ok,
    );
    expect(failures.length).toBeGreaterThan(0);
    for (const name of ['first', 'second']) {
      const parser = inline(
        `def:private:${name}`,
        'function parsePayload(s) { return { s: s }; }',
        1,
        'victim',
      );
      expect(sandbox.run(parser, [input('a'), input('b')])).toEqual([
        { ok: true, value: { s: 'a' } },
        { ok: true, value: { s: 'b' } },
      ]);
    }
  });

  it('gives the same parser id a context of its own in each environment', () => {
    const sandbox = testSandbox();
    const shared = (env: string) => fixture('global-state', { id: 'def:public:Shared', env });
    expect(sandbox.run(shared('alpha'), [input({ set: 'A' })])).toEqual([
      { ok: true, value: { secret: 'A', polluted: 'A', calls: 1 } },
    ]);
    expect(sandbox.run(shared('beta'), [input({})])).toEqual([
      { ok: true, value: { secret: null, polluted: null, calls: 1 } },
    ]);
  });

  it("keeps each environment's parser time, across the replacement of its isolate", () => {
    const sandbox = testSandbox({ timeoutMs: 3000 });
    sandbox.run(busy('evil', 30), [input('x')]);
    sandbox.run(counter('victim'), [input('x')]);
    // CPU time: the busy loops run 30 ms of wall time, of which a loaded machine gives them less.
    const before = sandbox.cpuTimeByEnv().get('evil') ?? 0;
    expect(before).toBeGreaterThan(0);
    expect(sandbox.run(fixture('allocates', { env: 'evil' }), [input({ allocate: true })])).toMatchObject([
      { ok: false, code: 'PARSER_MEMORY' },
    ]);
    const afterBomb = sandbox.cpuTimeByEnv().get('evil') ?? 0;
    expect(afterBomb).toBeGreaterThan(before);
    sandbox.run(busy('evil', 30), [input('x')]);
    expect(sandbox.cpuTimeByEnv().get('evil')).toBeGreaterThan(afterBomb);
    // The victim's time is its own: what evil ran is not in it.
    expect(sandbox.cpuTimeByEnv().get('victim')).toBeLessThan(before);
  });
});
