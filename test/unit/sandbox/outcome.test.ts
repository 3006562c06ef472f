import { describe, expect, it } from 'vitest';
import { decodeBatchResult } from '../../../src/sandbox/outcome.ts';
import { describeUserError, locate } from '../../../src/sandbox/host-errors.ts';

const malformed = {
  ok: false,
  code: 'PARSER_BAD_RESULT',
  message: 'the sandbox returned a malformed result',
};

describe('decodeBatchResult', () => {
  it('reads one outcome per input, logs included', () => {
    const output = JSON.stringify([
      { ok: true, value: { a: 1 } },
      { ok: false, code: 'PARSER_ERROR', message: 'boom', logs: ['x', 3] },
    ]);
    expect(decodeBatchResult(output, 2)).toEqual([
      { ok: true, value: { a: 1 } },
      { ok: false, code: 'PARSER_ERROR', message: 'boom', logs: ['x'] },
    ]);
  });

  it("keeps a codec's warnings as strings, and drops them when none are left", () => {
    const output = JSON.stringify([
      { ok: true, value: { a: 1 }, warnings: ['low battery', 7] },
      { ok: true, value: {}, warnings: [] },
      { ok: true, value: {}, warnings: 'not a list' },
      { ok: false, code: 'PARSER_CODEC_ERRORS', message: 'bad port' },
    ]);
    expect(decodeBatchResult(output, 4)).toEqual([
      { ok: true, value: { a: 1 }, warnings: ['low battery'] },
      { ok: true, value: {} },
      { ok: true, value: {} },
      { ok: false, code: 'PARSER_CODEC_ERRORS', message: 'bad port' },
    ]);
  });

  it.each([
    ['a non-string', 42, 1],
    ['invalid JSON', '[{"ok":tru', 1],
    ['not an array', '{"ok":true,"value":1}', 1],
    ['the wrong count', '[{"ok":true,"value":1}]', 2],
  ])('turns %s into PARSER_BAD_RESULT for every input', (_, output, count) => {
    expect(decodeBatchResult(output, count)).toEqual(Array.from({ length: count }, () => malformed));
  });

  it.each([
    ['an unknown code', { ok: false, code: 'INTERNAL', message: 'x' }],
    ['a missing value', { ok: true }],
    ['a missing message', { ok: false, code: 'PARSER_ERROR' }],
    ['null', null],
  ])('turns an entry with %s into PARSER_BAD_RESULT', (_, entry) => {
    expect(decodeBatchResult(JSON.stringify([entry]), 1)).toEqual([malformed]);
  });
});

describe('describeUserError', () => {
  it('rewrites an isolated-vm compile error to name: message (at file:line:column)', () => {
    const err = new SyntaxError("Unexpected token '*' [p.js:5:40]");
    expect(describeUserError(err, 'p.js')).toBe("SyntaxError: Unexpected token '*' (at p.js:5:40)");
  });

  it('takes the location from the first stack frame in the user file', () => {
    const stack = 'TypeError: x\n    at harness:1:1\n    at parsePayload (p.js:2:16)\n    at p.js:9:1';
    expect(locate(stack, 'p.js')).toBe(' (at p.js:2:16)');
    expect(locate(stack, 'q.js')).toBe('');
  });

  it('describes a thrown non-error value', () => {
    expect(describeUserError('nope', 'p.js')).toBe('the parser threw nope');
  });
});
