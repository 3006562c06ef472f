/**
 * A data point's `source`: where its value is in a parser's result when it is not the top-level
 * key of the data point's name. Codecs return nested objects (`{position: {latitude, longitude}}`)
 * and arrays (`{channels: [{value}, …]}`), and `.` is legal in a data point's name, so the path is a
 * field of its own: keys separated by `.`, an array element as `[n]` or `.n`. Pure.
 */

/** A path's steps: object keys, and array indexes where a step is all digits. */
export type SourcePath = readonly string[];

const STEP = /^(?:[^.[\]]+)$/;
const INDEX = /^\[(\d{1,9})\]/;

/** The steps of `text`, or why it is not a path. */
export function parseSourcePath(text: string): SourcePath | { problem: string } {
  const steps: string[] = [];
  let rest = text;
  let first = true;
  while (rest.length > 0) {
    const index = INDEX.exec(rest);
    if (index && !first) {
      steps.push(index[1]!);
      rest = rest.slice(index[0].length);
      continue;
    }
    if (!first) {
      if (!rest.startsWith('.')) return { problem: `expected "." or "[n]" at "${rest}"` };
      rest = rest.slice(1);
    }
    const end = rest.search(/[.[]/);
    const step = end < 0 ? rest : rest.slice(0, end);
    if (!STEP.test(step)) return { problem: 'a key of the path is empty or holds "[" or "]"' };
    steps.push(step);
    rest = end < 0 ? '' : rest.slice(end);
    first = false;
  }
  return steps.length > 0 ? steps : { problem: 'the path is empty' };
}

/**
 * The value at `path` in `value` (a parser's result, fresh from JSON), or undefined where a step
 * finds nothing. Only own properties are followed: `constructor` or `__proto__` find nothing.
 */
export function valueAtPath(value: unknown, path: SourcePath): unknown {
  let at = value;
  for (const step of path) {
    if (typeof at !== 'object' || at === null) return undefined;
    if (Array.isArray(at)) {
      if (!/^\d+$/.test(step)) return undefined;
      at = at[Number(step)];
    } else {
      if (!Object.hasOwn(at, step)) return undefined;
      at = (at as Record<string, unknown>)[step];
    }
  }
  return at;
}
