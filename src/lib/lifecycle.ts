/**
 * Stopping what was started: each part registers how it stops as it starts, and `close()` stops
 * them last registered first — traffic before workers, workers before the connections they use.
 */
import type { Logger } from '../log/logger.ts';

export interface StopOptions {
  /**
   * Longest this step may take, in ms: one still stopping then is logged and left behind (as a
   * killed process leaves it), and the next step starts. No bound by default.
   */
  timeoutMs?: number;
}

export interface Lifecycle {
  /** Registers a stop step: it runs before every step registered earlier. */
  add(name: string, stop: () => unknown, options?: StopOptions): void;
  /**
   * Runs every step once, last registered first (a step registered meanwhile runs next). Every step
   * runs even if one before it failed; each failure is logged with its error (`{ err, step }`) and
   * close() then rejects with an AggregateError holding them all. Safe to call twice: a second call
   * returns the first call's promise. Needs no `this`: it may be handed on as it is.
   */
  close(this: void): Promise<void>;
}

interface Step {
  name: string;
  stop: () => unknown;
  timeoutMs: number | undefined;
}

/** What stopping one step came to. */
type Outcome = { kind: 'done' } | { kind: 'late' } | { kind: 'failed'; err: unknown };

/** `log` is the owner's logger (with its component), where each step's outcome is written. */
export function createLifecycle({ log }: { log: Logger }): Lifecycle {
  const steps: Step[] = [];
  let closing: Promise<void> | undefined;

  async function closeAll(): Promise<void> {
    const failures: unknown[] = [];
    for (let step = steps.pop(); step; step = steps.pop()) {
      const outcome = await stopWithin(step);
      if (outcome.kind === 'done') log.debug({ step: step.name }, 'stopped');
      else if (outcome.kind === 'late')
        log.warn(
          { step: step.name, timeoutMs: step.timeoutMs },
          'still stopping after its bound; left behind',
        );
      else {
        log.error({ err: outcome.err, step: step.name }, 'failed to stop cleanly');
        failures.push(outcome.err);
      }
    }
    if (failures.length > 0)
      throw new AggregateError(failures, `${failures.length} part(s) failed to stop cleanly`);
  }

  return {
    add(name, stop, options = {}) {
      steps.push({ name, stop, timeoutMs: options.timeoutMs });
    },
    close: () => (closing ??= closeAll()),
  };
}

async function stopWithin(step: Step): Promise<Outcome> {
  const stopping = Promise.resolve()
    .then(step.stop)
    .then(
      (): Outcome => ({ kind: 'done' }),
      (err: unknown): Outcome => ({ kind: 'failed', err }),
    );
  if (step.timeoutMs === undefined) return stopping;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Outcome>((resolve) => {
    timer = setTimeout(() => resolve({ kind: 'late' }), step.timeoutMs);
  });
  try {
    return await Promise.race([stopping, late]);
  } finally {
    clearTimeout(timer);
  }
}
