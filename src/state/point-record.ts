/**
 * The packed state of one data point, field `<sensor>|p` of its device's state hash (STATE_FIELD.
 * packed), as the partition's owner writes it (state-store.ts): a layout byte (2), then
 * twelve little-endian doubles — measurement ms, sub-ms offset, rule index, last success ms, status
 * since ms, the current hour (hour, count, total, min, max, late flag), and the receive time of the
 * current value — then the status, the rules fingerprint and the held rules as zero-terminated
 * UTF-8, then the current value as shown (a 4-byte length, then its UTF-8). NaN stands for "never"
 * (last success, status since, received); hour -1 for "no hour kept".
 *
 * Held rules (only for data points whose rules wait, `for`): the rules the current value meets, in
 * preference order, comma-separated, each followed by `@<ms>` when it waits — the measurement time
 * from which its condition has held (`2@1764230400000,0`). The shown value is kept only for data
 * points with `for` or `stale` rules: a status entered at a deadline names it in its event.
 */

import type { HeldRule, PointRecord } from '../domain/point-step.ts';

/**
 * The layout byte this version reads and writes. A new one comes with a migration of the stored
 * records (src/migrations.ts); the owner and the readers refuse any other.
 */
export const POINT_LAYOUT = 2;
export { STALE_RULE } from '../domain/point-step.ts';
export type { HeldRule, KeptHour, PointRecord } from '../domain/point-step.ts';
const DOUBLES = 12;
const STRINGS_AT = 1 + DOUBLES * 8;

/**
 * The record, or null for a buffer of another layout or length. Callers that show state refuse a
 * record of another layout first (read-state.ts): it is not "no state".
 */
export function decodePoint(b: Buffer): PointRecord | null {
  if (b.length < STRINGS_AT + 3 + 4 || b[0] !== POINT_LAYOUT) return null;
  const d = (i: number) => b.readDoubleLE(1 + i * 8);
  const statusEnd = b.indexOf(0, STRINGS_AT);
  const rulesEnd = statusEnd < 0 ? -1 : b.indexOf(0, statusEnd + 1);
  const heldEnd = rulesEnd < 0 ? -1 : b.indexOf(0, rulesEnd + 1);
  if (heldEnd < 0 || heldEnd + 5 > b.length) return null;
  const shownLength = b.readUInt32LE(heldEnd + 1);
  if (heldEnd + 5 + shownLength !== b.length) return null;
  const hour = d(5);
  return {
    updatedMs: d(0),
    offsetNs: d(1),
    rule: d(2),
    lastSuccessMs: orNull(d(3)),
    statusSinceMs: orNull(d(4)),
    hour: hour < 0 ? null : { hour, count: d(6), total: d(7), min: d(8), max: d(9), late: d(10) !== 0 },
    receivedMs: orNull(d(11)),
    status: b.toString('utf8', STRINGS_AT, statusEnd),
    rulesId: b.toString('utf8', statusEnd + 1, rulesEnd),
    held: decodeHeld(b.toString('utf8', rulesEnd + 1, heldEnd)),
    shownValue: b.toString('utf8', heldEnd + 5),
  };
}

/** The packed bytes of `r`: what the owner writes (and seeding, migrations, tests). */
export function encodePoint(r: PointRecord): Buffer {
  const strings = Buffer.from(`${r.status}\0${r.rulesId}\0${encodeHeld(r.held)}\0`, 'utf8');
  const shown = Buffer.from(r.shownValue, 'utf8');
  const b = Buffer.alloc(STRINGS_AT + strings.length + 4 + shown.length);
  b[0] = POINT_LAYOUT;
  const h = r.hour;
  [
    r.updatedMs,
    r.offsetNs,
    r.rule,
    r.lastSuccessMs ?? NaN,
    r.statusSinceMs ?? NaN,
    h ? h.hour : -1,
    h?.count ?? 0,
    h?.total ?? 0,
    h?.min ?? 0,
    h?.max ?? 0,
    h?.late ? 1 : 0,
    r.receivedMs ?? NaN,
  ].forEach((x, i) => b.writeDoubleLE(x, 1 + i * 8));
  strings.copy(b, STRINGS_AT);
  b.writeUInt32LE(shown.length, STRINGS_AT + strings.length);
  shown.copy(b, STRINGS_AT + strings.length + 4);
  return b;
}

function decodeHeld(text: string): HeldRule[] {
  if (text === '') return [];
  return text.split(',').map((part) => {
    const [rule, since] = part.split('@');
    return { rule: Number(rule), sinceMs: since === undefined ? null : Number(since) };
  });
}

const encodeHeld = (held: readonly HeldRule[]): string =>
  held.map((h) => (h.sinceMs === null ? String(h.rule) : `${h.rule}@${h.sinceMs}`)).join(',');

const orNull = (x: number): number | null => (Number.isNaN(x) ? null : x);
