import { describe, expect, it } from 'vitest';
import { checkSyntax } from '../../../src/sandbox/check-syntax.ts';

describe('checkSyntax', () => {
  it('accepts a source that compiles and names parsePayload', () => {
    expect(checkSyntax('function parsePayload(s) { return JSON.parse(s); }', 'p.js')).toEqual({ ok: true });
  });

  it('reports a syntax error with its line and column', () => {
    const check = checkSyntax('function parsePayload(s) {\n  return [;\n}\n', 'p.js');
    if (check.ok) throw new Error('it compiled');
    expect([check.line, (check.column ?? 0) > 0]).toEqual([2, true]);
    expect(check.message).toMatch(/^SyntaxError: .* \(at p\.js:2:\d+\)$/);
  });

  it('refuses a source without parsePayload, with no place to name', () => {
    const check = checkSyntax('const x = 1;', 'p.js');
    expect(check).toEqual({
      ok: false,
      message: 'p.js does not define parsePayload(payloadStr, payloadRaw)',
    });
  });
});
