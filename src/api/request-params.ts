/**
 * Request attributes of the read API (docs/interface.md#request-forms), from whichever of the three forms a client
 * used: a JSON body (whatever its Content-Type), query parameters, or a JSON object forming the
 * whole query string (`curl -G -d '{"deviceName":"x"}'`, raw or URL-encoded). Pure: no I/O.
 * Each route's schema (attributes.ts) then reads them, accepting the text forms of the query string.
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
