/**
 * A scheduler's pass run every `intervalMs` (lib/periodic.ts), with its failures logged and retried
 * at the next pass; not started when `autoStart` is false (tests call the pass themselves).
 */
import { startPeriodic } from '../lib/periodic.ts';
import type { Logger } from '../log/logger.ts';

export function schedulePasses(
  deps: { intervalMs: number; log: Logger; autoStart?: boolean },
  what: string,
  pass: () => Promise<unknown>,
): { close(): Promise<void> } {
  if (deps.autoStart === false) return { close: () => Promise.resolve() };
  return startPeriodic({
    intervalMs: deps.intervalMs,
    run: pass,
    onError: (err: unknown) => deps.log.warn({ err }, `${what} failed`),
  });
}
