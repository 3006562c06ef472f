/** InfluxQL quoting: identifiers, string literals, regex literals and times. Pure functions. */

/** A double-quoted identifier (database, policy, measurement, tag or field name). */
export function ident(name: string): string {
  return `"${name.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/** A single-quoted string literal (tag values in WHERE). */
export function str(value: string): string {
  return `'${value.replace(/[\\']/g, (c) => `\\${c}`)}'`;
}

/**
 * A regex literal matching exactly one of `values`: `/^(?:a|b)$/`. Regex metacharacters are escaped
 * (RE2 takes a backslash before any punctuation as a literal) and so is the delimiter `/`.
 */
export function anyOfRegex(values: readonly string[]): string {
  const alternatives = [...new Set(values)].map((v) => v.replace(/[.*+?^${}()|[\]\\/]/g, (c) => `\\${c}`));
  return `/^(?:${alternatives.join('|')})$/`;
}

/** An epoch-millisecond time literal (`1700000000000ms`), as Grafana's $timeFilter writes them. */
export function msTime(ms: number): string {
  return `${Math.trunc(ms)}ms`;
}

/**
 * Parses an RFC 3339 time as InfluxDB returns it (`2026-11-22T05:40:44.123456789Z`, fraction
 * trimmed of trailing zeros or absent) into epoch nanoseconds, exactly.
 */
export function parseRfc3339Ns(s: string): bigint {
  const m = /^(.*T\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?Z$/.exec(s);
  if (!m?.[1]) throw new Error(`unexpected InfluxDB time: ${s}`);
  const secondsMs = Date.parse(`${m[1]}Z`);
  if (Number.isNaN(secondsMs)) throw new Error(`unexpected InfluxDB time: ${s}`);
  const fraction = BigInt((m[2] ?? '').padEnd(9, '0'));
  return BigInt(secondsMs) * 1_000_000n + fraction;
}
