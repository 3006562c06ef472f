/**
 * Characters that change how text around them reads: C0 controls (CR and LF forge whole lines,
 * ESC starts terminal sequences), DEL, C1 controls, the Unicode bidi controls and the line and
 * paragraph separators. Text from outside — device names, display names, values, parser messages
 * — reaches terminals, emails and chat messages; there each such character is shown as a visible
 * escape (`\r`, `\x1b`, `\u202e`) instead, or refused where a name is set.
 */

/** DEL, C1, the Unicode bidi controls and the line/paragraph separators (a regex class body). */
export const BEYOND_C0 = '\\u007f-\\u009f\\u061c\\u200e\\u200f\\u2028\\u2029\\u202a-\\u202e\\u2066-\\u2069';

const CONTROL = new RegExp(`[\\u0000-\\u001f${BEYOND_C0}]`);
const CONTROLS = new RegExp(CONTROL.source, 'g');

const NAMED: Record<string, string> = { '\n': '\\n', '\r': '\\r', '\t': '\\t' };

const hex = (c: string, digits: number) => c.charCodeAt(0).toString(16).padStart(digits, '0');

/** True when `text` holds any of these characters. */
export const hasControlCharacters = (text: string): boolean => CONTROL.test(text);

/**
 * One line: every such character as a visible escape (`\n`, `\x1b`, `\u202e`); nothing else
 * changes, and escaping twice changes nothing more.
 */
export function escapeControls(text: string): string {
  return text.replace(CONTROLS, (c) => NAMED[c] ?? (c <= '\u00ff' ? `\\x${hex(c, 2)}` : `\\u${hex(c, 4)}`));
}
