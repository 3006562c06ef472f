import { describe, expect, it } from 'vitest';
import { blockLines, escapeControls, escapeJsonText } from '../../../src/cli/terminal-text.ts';

describe('escapeControls', () => {
  it.each([
    ['plain name', 'plain name'],
    ['\u001b[31mred', '\\x1b[31mred'],
    ['\u001b]8;;http://x\u0007link', '\\x1b]8;;http://x\\x07link'],
    ['a\rb\nc\td', 'a\\rb\\nc\\td'],
    ['\u0000\u007f\u0085\u009b', '\\x00\\x7f\\x85\\x9b'],
    ['abc\u202edcba\u2066x\u2069', 'abc\\u202edcba\\u2066x\\u2069'],
    ['line\u2028next\u2029', 'line\\u2028next\\u2029'],
    ['°C, Zürich, 温度, 🌡', '°C, Zürich, 温度, 🌡'],
  ])('shows %j as %j', (text, shown) => {
    expect(escapeControls(text)).toBe(shown);
    expect(escapeControls(shown)).toBe(shown);
  });
});

describe('blockLines', () => {
  it('keeps the lines and indentation of a block and escapes the rest', () => {
    expect(blockLines('function f() {\r\n\treturn 1;\n  x\u001b[2J;\n}')).toEqual([
      'function f() {',
      '        return 1;',
      '  x\\x1b[2J;',
      '}',
    ]);
  });
});

describe('escapeJsonText', () => {
  it('escapes what JSON.stringify leaves raw, keeping the same value', () => {
    const value = { name: 'a\u007f\u009b[31m\u2028\u202eb\u001b' };
    const text = escapeJsonText(JSON.stringify(value));
    expect(text).toBe('{"name":"a\\u007f\\u009b[31m\\u2028\\u202eb\\u001b"}');
    expect(JSON.parse(text)).toEqual(value);
  });
});
