/**
 * Request attributes of the read API (PRODUCT.md §10), from whichever of the three forms a client
 * used: a JSON body (whatever its Content-Type), query parameters, or a JSON object forming the
 * whole query string (`curl -G -d '{"deviceName":"x"}'`, raw or URL-encoded). Pure: no I/O.
 * Typed readers then take each attribute, accepting the text forms the query string carries.
 */
import { AppError } from '../errors/app-error.ts';

/** The attributes of one request; values are JSON values or query-string text. */
export type Attributes = Record<string, unknown>;

/**
 * Merges the body and the query string into one attribute object (the body wins on a clash).
 * `rawQuery` is the part of the URL after `?`; `body` the body as text ('' when none).
 */
export function collectAttributes(
  rawQuery: string,
  body: string,
  contentType: string | undefined,
): Attributes {
  return { ...parseQuery(rawQuery), ...parseBody(body, contentType) };
}

/** The query string as attributes: a whole-query JSON object, or key=value pairs. */
export function parseQuery(rawQuery: string): Attributes {
  if (rawQuery === '') return {};
  const json = wholeQueryJson(rawQuery);
  if (json !== undefined) return json;
  // Without a prototype: a parameter named `__proto__` or `constructor` is just an attribute.
  const out: Attributes = Object.create(null) as Attributes;
  for (const [key, value] of new URLSearchParams(rawQuery)) {
    const prev = out[key];
    if (prev === undefined) out[key] = value;
    else out[key] = Array.isArray(prev) ? [...(prev as unknown[]), value] : [prev, value];
  }
  return out;
}

/** A query string that is one JSON object, raw (`{"a":1}`) or URL/form-encoded. */
function wholeQueryJson(rawQuery: string): Attributes | undefined {
  const candidates = [rawQuery];
  try {
    // Encoded text carries a literal plus as %2B, so a bare plus is a form-encoded space. When the
    // text holds percent-escapes it was encoded (browsers and fetch escape `"` and spaces but leave
    // braces): the decoded form goes first. Names never contain `%`, so nothing real is lost.
    const decoded = decodeURIComponent(rawQuery.replace(/\+/g, ' '));
    if (/%[0-9A-Fa-f]{2}/.test(rawQuery)) candidates.unshift(decoded);
    else candidates.push(decoded);
  } catch {
    // Not valid percent-encoding: only the raw form can be JSON.
  }
  for (const text of candidates) {
    if (!text.trimStart().startsWith('{')) continue;
    const value = tryJson(text);
    if (isPlainObject(value)) return value;
  }
  if (candidates.some((t) => t.trimStart().startsWith('{'))) {
    throw new AppError('INVALID_JSON', 'The query string looks like a JSON object but is not valid JSON.');
  }
  return undefined;
}

/** The body as attributes: JSON whatever the Content-Type; a form body when it is not JSON. */
export function parseBody(body: string, contentType: string | undefined): Attributes {
  if (body.trim() === '') return {};
  const value = tryJson(body);
  if (isPlainObject(value)) return value;
  if (value === undefined && /application\/x-www-form-urlencoded/i.test(contentType ?? '')) {
    return parseQuery(body.trim());
  }
  throw new AppError(
    'INVALID_JSON',
    value === undefined ? 'The body is not valid JSON.' : 'The body must be a JSON object.',
  );
}

function tryJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

const isPlainObject = (v: unknown): v is Attributes =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const missing = (name: string) =>
  new AppError('MISSING_ATTRIBUTE', `The attribute ${name} is required.`, { details: { attribute: name } });
const invalid = (name: string, expected: string) =>
  new AppError('INVALID_ATTRIBUTE', `The attribute ${name} must be ${expected}.`, {
    details: { attribute: name },
  });

/** A non-empty string attribute. */
export function readString(attrs: Attributes, name: string): string;
export function readString(attrs: Attributes, name: string, opts: { optional: true }): string | undefined;
export function readString(attrs: Attributes, name: string, opts?: { optional: true }): string | undefined {
  const v = attrs[name];
  if (v === undefined || v === null || v === '') {
    if (opts?.optional) return undefined;
    throw missing(name);
  }
  if (typeof v !== 'string') throw invalid(name, 'a string');
  return v;
}

/** A boolean attribute: JSON true/false or the text `true`/`false`. */
export function readBoolean(attrs: Attributes, name: string): boolean {
  const v = attrs[name];
  if (v === undefined || v === null || v === '') throw missing(name);
  if (typeof v === 'boolean') return v;
  if (v === 'true') return true;
  if (v === 'false') return false;
  throw invalid(name, 'true or false');
}

/** An optional finite number: a JSON number or numeric text. */
export function readNumber(
  attrs: Attributes,
  name: string,
  opts: { integer?: boolean; min?: number; max?: number } = {},
): number | undefined {
  const v = attrs[name];
  if (v === undefined || v === null || v === '') return undefined;
  const n = typeof v === 'number' ? v : typeof v === 'string' && v.trim() !== '' ? Number(v) : NaN;
  const range = `${opts.min ?? '-∞'}..${opts.max ?? '∞'}`;
  if (!Number.isFinite(n)) throw invalid(name, 'a number');
  if (opts.integer && !Number.isInteger(n)) throw invalid(name, 'an integer');
  if ((opts.min !== undefined && n < opts.min) || (opts.max !== undefined && n > opts.max))
    throw invalid(name, `within ${range}`);
  return n;
}

/**
 * A required array attribute: a JSON array, repeated query keys, a JSON array string, or a single
 * value (one item). Each item is checked by `item`, which returns undefined for a bad one.
 */
export function readArray<T>(
  attrs: Attributes,
  name: string,
  expected: string,
  item: (v: unknown) => T | undefined,
): T[] {
  const v = attrs[name];
  if (v === undefined || v === null || v === '') throw missing(name);
  const values: unknown[] = Array.isArray(v) ? (v as unknown[]) : [v];
  const list = values.flatMap((x: unknown): unknown[] => {
    const parsed: unknown = typeof x === 'string' && /^\s*[[{]/.test(x) ? tryJson(x) : x;
    return Array.isArray(parsed) ? (parsed as unknown[]) : [parsed];
  });
  return list.map((x) => {
    const out = item(x);
    if (out === undefined) throw invalid(name, expected);
    return out;
  });
}

/** Item checker for arrays of non-empty strings. */
export const stringItem = (v: unknown): string | undefined =>
  typeof v === 'string' && v !== '' ? v : undefined;

/** Item checker for `{deviceName, sensorName}` objects. */
export function sensorRefItem(v: unknown): { deviceName: string; sensorName: string } | undefined {
  if (!isPlainObject(v)) return undefined;
  const { deviceName, sensorName } = v;
  return typeof deviceName === 'string' &&
    deviceName !== '' &&
    typeof sensorName === 'string' &&
    sensorName !== ''
    ? { deviceName, sensorName }
    : undefined;
}
