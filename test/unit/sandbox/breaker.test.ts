import { describe, expect, it } from 'vitest';
import { createParserBreaker } from '../../../src/sandbox/breaker.ts';
import { parseFailure, type ParseOutcome } from '../../../src/sandbox/outcome.ts';

const timeout = parseFailure('PARSER_TIMEOUT', 'parsePayload ran longer than 50 ms');
const memory = parseFailure('PARSER_MEMORY', 'parsePayload went over the sandbox memory limit of 32 MB');
const error = parseFailure('PARSER_ERROR', 'TypeError: x');
const ok: ParseOutcome = { ok: true, value: {} };

function setUp() {
  let now = 1_000;
  const breaker = createParserBreaker({ tripAfter: 3, suspendMs: 10_000, clock: () => now });
  return { breaker, advance: (ms: number) => (now += ms) };
}

describe('parser breaker', () => {
  it('suspends a parser after tripAfter limit failures in a row, with the last code', () => {
    const { breaker } = setUp();
    expect(breaker.record('p', 1, [timeout, timeout])).toBe(false);
    expect(breaker.suspended('p', 1)).toBeUndefined();
    expect(breaker.record('p', 1, [memory])).toBe(true);
    expect(breaker.suspended('p', 1)).toMatchObject({ ok: false, code: 'PARSER_MEMORY' });
  });

  it('resets the count on a success or another failure code', () => {
    const { breaker } = setUp();
    expect(breaker.record('p', 1, [timeout, timeout, ok, timeout, timeout, error, timeout])).toBe(false);
    expect(breaker.suspended('p', 1)).toBeUndefined();
  });

  it('runs the parser again after the suspension and suspends it at once on its next limit failure', () => {
    const { breaker, advance } = setUp();
    breaker.record('p', 1, [timeout, timeout, timeout]);
    advance(9_999);
    expect(breaker.suspended('p', 1)).toBeDefined();
    advance(1);
    expect(breaker.suspended('p', 1)).toBeUndefined();
    expect(breaker.record('p', 1, [timeout])).toBe(true);
    expect(breaker.suspended('p', 1)).toBeDefined();
  });

  it('forgives a parser whose next call after the suspension succeeds', () => {
    const { breaker, advance } = setUp();
    breaker.record('p', 1, [timeout, timeout, timeout]);
    advance(10_000);
    breaker.record('p', 1, [ok, timeout, timeout]);
    expect(breaker.suspended('p', 1)).toBeUndefined();
  });

  it('keeps parsers apart and starts a new revision afresh', () => {
    const { breaker } = setUp();
    breaker.record('p', 1, [timeout, timeout, timeout]);
    expect(breaker.suspended('q', 1)).toBeUndefined();
    expect(breaker.suspended('p', 2)).toBeUndefined();
    breaker.record('p', 2, [timeout]);
    expect(breaker.suspended('p', 2)).toBeUndefined();
  });
});
