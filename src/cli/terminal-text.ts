/**
 * Text the CLI prints comes largely from outside: device names sent to the gateway, parser
 * messages, definitions and dead-letter reasons. Printed raw, its control characters would reach
 * the operator's terminal — ESC sequences that recolour, move the cursor, rewrite earlier lines or
 * plant links (CSI, OSC 8), CR and LF that forge whole lines, and bidi controls or line separators
 * that make a line read other than it is. Every such character is shown as a visible escape
 * instead (`\x1b`, `\n`, `\u202e`); nothing else changes, and escaping twice changes nothing more.
 */

import { BEYOND_C0, escapeControls } from '../lib/control-characters.ts';

export { escapeControls };

const UNSAFE_IN_JSON = new RegExp(`[${BEYOND_C0}]`, 'g');

const hex = (c: string, digits: number) => c.charCodeAt(0).toString(16).padStart(digits, '0');

/**
 * A multi-line block meant to be shown as such (a parser's source, a definition as JSON, a QR
 * code): its lines, with tabs expanded to 8-column stops as a terminal would show them and every
 * other unsafe character escaped.
 */
export function blockLines(text: string): string[] {
  return text.split(/\r?\n/).map((line) => escapeControls(expandTabs(line)));
}

function expandTabs(line: string): string {
  let out = '';
  for (const c of line) out += c === '\t' ? ' '.repeat(8 - (out.length % 8)) : c;
  return out;
}

/**
 * JSON text whose strings carry no raw DEL, C1, bidi or separator characters (JSON.stringify
 * escapes only C0); the same JSON value, since these only ever stand inside strings.
 */
export function escapeJsonText(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (c) => `\\u${hex(c, 4)}`);
}
