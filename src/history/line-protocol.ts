/**
 * InfluxDB line protocol, built by hand: escaping of measurement names, tags and string fields, and
 * nanosecond timestamps. Pure functions; same input, same line (writes are idempotent).
 */

/** A field value as written: numbers are floats, `{ int }` an integer, strings quoted. */
export type FieldValue = number | string | { int: number };

const TAG_SPECIAL = /[,= \\\r\n]/;

/**
 * Escapes a tag key or value. Commas, equals signs and spaces get a backslash. Line protocol cannot
 * carry a newline in a tag, nor a backslash right before a delimiter or at the end (1.x rejects the
 * line): those become a space and a slash. Vigil's names never hold them (they are validated on
 * creation); the mapping only keeps a bad name from failing a whole batch forever.
 */
export function escapeTag(s: string): string {
  // Almost every name needs nothing: one scan instead of three replacements.
  if (!TAG_SPECIAL.test(s)) return s;
  return s
    .replace(/[\r\n]/g, ' ')
    .replace(/\\(?=[,= ]|$)/g, '/')
    .replace(/[,= ]/g, (c) => `\\${c}`);
}

/** Escapes a measurement name (commas and spaces). */
export function escapeMeasurement(s: string): string {
  return s.replace(/[,\s]/g, (c) => `\\${c}`);
}

/** A string field value in double quotes; backslashes and quotes escaped, newlines kept. */
export function quoteFieldString(s: string): string {
  return `"${s.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

function formatField(v: FieldValue): string {
  if (typeof v === 'string') return quoteFieldString(v);
  if (typeof v === 'number') return String(v);
  return `${Math.trunc(v.int)}i`;
}

/**
 * Nanosecond timestamp of a measurement time plus a sub-millisecond offset (0..999,999), exact:
 * epoch ns exceed 2^53, so the sum is built as a BigInt.
 */
export function timestampNs(timeMs: number, offsetNs: number): string {
  const off = Math.min(999_999, Math.max(0, Math.trunc(offsetNs)));
  // Positive whole milliseconds (every real measurement time): digits side by side, no BigInt.
  if (timeMs > 0 && Number.isSafeInteger(timeMs)) return `${timeMs}${String(1_000_000 + off).slice(1)}`;
  return (BigInt(Math.trunc(timeMs)) * 1_000_000n + BigInt(off)).toString();
}

/**
 * One line: tags with empty values are left out (line protocol refuses them), tags sorted by key
 * (InfluxDB's own order, which saves it a sort), fields in the given order. Undefined fields and
 * non-finite numbers are skipped; a line without fields is not a line (returns undefined).
 */
export function formatLine(
  measurement: string,
  tags: Record<string, string>,
  fields: Record<string, FieldValue | undefined>,
  timestamp: string,
): string | undefined {
  const fieldParts: string[] = [];
  for (const [k, v] of Object.entries(fields)) {
    if (v === undefined || (typeof v === 'number' && !Number.isFinite(v))) continue;
    fieldParts.push(`${escapeTag(k)}=${formatField(v)}`);
  }
  if (fieldParts.length === 0) return undefined;
  const tagParts = Object.keys(tags)
    .sort()
    .filter((k) => tags[k] !== '' && tags[k] !== undefined)
    .map((k) => `,${escapeTag(k)}=${escapeTag(tags[k] ?? '')}`);
  return `${escapeMeasurement(measurement)}${tagParts.join('')} ${fieldParts.join(',')} ${timestamp}`;
}
