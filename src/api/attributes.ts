/**
 * Request attributes as zod schemas. Each route declares its attributes once, with `attributes()`
 * and the `attr` helpers; the same schema validates every request (`parseAttributes`, before the
 * handler runs) and describes the endpoint in the OpenAPI document (openapi.ts).
 *
 * The helpers accept the text forms a query string carries: numbers as numeric text, booleans as
 * `true`/`false`, lists as repeated keys, a JSON array string or a single value. Their output is
 * the canonical type (number, boolean, array), which is what the document shows. An attribute that
 * is `''` or null counts as absent.
 */
import { z } from 'zod';
import { AppError } from '../errors/app-error.ts';
import type { Attributes } from './request-params.ts';

/** A route's attributes: validates the merged request attributes into `A`. */
export type AttributesSchema<A> = z.ZodType<A, unknown>;

const isAbsent = (v: unknown): boolean => v === undefined || v === null || v === '';

/** The attributes named in `shape`, leaving out those that are absent, '' or null. */
export function attributes<S extends z.ZodRawShape>(shape: S) {
  const names = Object.keys(shape);
  const present = (attrs: unknown): Record<string, unknown> => {
    const out: Record<string, unknown> = {};
    for (const name of names) {
      const value = (attrs as Attributes)[name];
      if (!isAbsent(value)) out[name] = value;
    }
    return out;
  };
  return z.preprocess(present, z.object(shape));
}

/**
 * The attributes of a management operation (src/management/): a JSON object whose attributes are
 * all named in `shape` — an unknown one (a misspelt `dispalyName`) is refused rather than ignored —
 * and where null is a value (`availabilityMinutes: null` means "inherit again").
 */
export function strictAttributes<S extends z.ZodRawShape>(shape: S) {
  return z.strictObject(shape);
}

/**
 * Attribute types. Each sets one message for every way a value can fail, the text that follows
 * "The attribute … must be".
 */
export const attr = {
  /** A non-empty string, taken as it is (`true` stays text). */
  string: () => z.string({ error: 'a non-empty string' }).min(1, { error: 'a non-empty string' }),

  /** `true`/`false`, as JSON or text. */
  boolean: () => z.preprocess(booleanFromText, z.boolean({ error: 'true or false' })),

  /** A finite number, as JSON or numeric text; `integer`, `min` and `max` narrow it. */
  number(range: { integer?: boolean; min?: number; max?: number } = {}) {
    const error = `${range.integer ? 'an integer' : 'a number'}${rangeText(range)}`;
    let n = z.number({ error });
    if (range.integer) n = n.int({ error });
    if (range.min !== undefined) n = n.min(range.min, { error });
    if (range.max !== undefined) n = n.max(range.max, { error });
    return z.preprocess(numberFromText, n);
  },

  /** One of `values`. */
  oneOf: <const V extends readonly [string, ...string[]]>(values: V) =>
    z.enum(values, { error: `one of ${values.join(', ')}` }),

  /**
   * A list of `item`: a JSON array, repeated query keys, a JSON array string or a single value
   * (one item). More than `max` items is BATCH_TOO_LARGE, found before any item is looked at.
   */
  list<T extends z.ZodType>(item: T, { max }: { max: number }) {
    const tooLong = (iss: { input?: unknown }) =>
      `At most ${max} items per request (${Array.isArray(iss.input) ? iss.input.length : '?'} sent).`;
    return z.preprocess(listFromText, z.array(item).max(max, { error: tooLong }));
  },
};

function rangeText({ min, max }: { min?: number; max?: number }): string {
  if (min !== undefined && max !== undefined) return ` within ${min}..${max}`;
  if (min !== undefined) return ` of at least ${min}`;
  if (max !== undefined) return ` of at most ${max}`;
  return '';
}

function booleanFromText(v: unknown): unknown {
  return v === 'true' ? true : v === 'false' ? false : v;
}

/** Numeric text as a number; other text becomes NaN, which z.number() refuses. */
function numberFromText(v: unknown): unknown {
  return typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
}

function listFromText(v: unknown): unknown {
  if (v === undefined) return v;
  const values: unknown[] = Array.isArray(v) ? (v as unknown[]) : [v];
  return values.flatMap((x: unknown): unknown[] => {
    const parsed = typeof x === 'string' && /^\s*[[{]/.test(x) ? jsonOrUndefined(x) : x;
    return Array.isArray(parsed) ? (parsed as unknown[]) : [parsed];
  });
}

/** Text that is not JSON becomes undefined: an item no schema accepts. */
function jsonOrUndefined(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/**
 * The request's attributes as `schema` reads them. The first failing attribute, in the order the
 * schema declares them, is the error: MISSING_ATTRIBUTE when it is absent, BATCH_TOO_LARGE for a
 * list over its maximum, INVALID_ATTRIBUTE otherwise; `error.attribute` names it.
 */
export function parseAttributes<A>(schema: AttributesSchema<A>, attrs: Attributes): A {
  const result = schema.safeParse(attrs);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (!issue) throw new AppError('INVALID_ATTRIBUTE', 'The attributes are not valid.');
  throw attributeError(issue, attrs);
}

function attributeError(issue: z.core.$ZodIssue, attrs: Attributes): AppError {
  if (issue.code === 'unrecognized_keys') {
    const attribute = issue.keys[0] ?? '';
    return new AppError('INVALID_ATTRIBUTE', `There is no attribute ${attribute} here.`, {
      details: { attribute },
    });
  }
  const [first, ...inner] = issue.path;
  const attribute = String(first);
  const details = { attribute };
  if (isAbsent(attrs[attribute])) {
    return new AppError('MISSING_ATTRIBUTE', `The attribute ${attribute} is required.`, { details });
  }
  if (inner.length === 0 && issue.code === 'too_big' && issue.origin === 'array') {
    return new AppError('BATCH_TOO_LARGE', issue.message, {
      details: { attribute, maxItems: Number(issue.maximum) },
    });
  }
  const where = inner.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('');
  return new AppError('INVALID_ATTRIBUTE', `The attribute ${attribute}${where} must be ${issue.message}.`, {
    details,
  });
}
