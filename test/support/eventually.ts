/**
 * The one way a test waits for something to happen: `eventually` runs `check` until it gives an
 * accepted value and returns that value, or fails after `timeoutMs` with what it waited for and the
 * last value (or error) it saw. A check that throws counts as not yet, so it may use `expect`.
 * Tests never sleep a fixed time to let something happen; where time itself must pass (to show that
 * something did not happen), the window is a short configured timer and the test says so.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { inspect } from 'node:util';

export interface EventuallyOptions<T> {
  /** What the test waits for, named in the failure. */
  message?: string;
  /** Longest wait, in ms; default 15 000. */
  timeoutMs?: number;
  /** Pause between two checks, in ms; default 25. */
  intervalMs?: number;
  /** Accepts a value; without it, any truthy value is accepted. */
  until?: (value: T) => boolean;
}

type Falsy = undefined | null | false | 0 | '';

export function eventually<T>(
  check: () => T | Promise<T>,
  options: EventuallyOptions<T> & { until: (value: T) => boolean },
): Promise<T>;
export function eventually<T>(
  check: () => T | Promise<T>,
  options?: EventuallyOptions<T>,
): Promise<Exclude<T, Falsy>>;
export async function eventually<T>(
  check: () => T | Promise<T>,
  { message = 'the condition', timeoutMs = 15_000, intervalMs = 25, until }: EventuallyOptions<T> = {},
): Promise<T> {
  const accepts = until ?? ((value: T) => Boolean(value));
  const deadline = Date.now() + timeoutMs;
  let last: { value: T } | { error: unknown };
  for (;;) {
    try {
      const value = await check();
      if (accepts(value)) return value;
      last = { value };
    } catch (error) {
      last = { error };
    }
    if (Date.now() >= deadline) break;
    await sleep(intervalMs);
  }
  const seen =
    'error' in last
      ? `error ${last.error instanceof Error ? last.error.message : inspect(last.error)}`
      : inspect(last.value, { depth: 4, maxArrayLength: 20, maxStringLength: 500, breakLength: Infinity });
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${message}; last seen: ${seen}`);
}
