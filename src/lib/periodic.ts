/**
 * A task run again `intervalMs` after each run ends (never two at once), until closed. A run that
 * fails is reported and the next one comes all the same.
 */
export interface Periodic {
  /** Stops the timer and waits for a run in progress; safe to call twice. */
  close(): Promise<void>;
}

export function startPeriodic(opts: {
  intervalMs: number;
  /** When the first run comes, in ms from now; `intervalMs` by default, 0 for at once. */
  firstRunAfterMs?: number;
  /**
   * Runs start every `intervalMs` from the first, as setInterval's do, rather than `intervalMs`
   * after each ends: for a renewal whose cadence is what keeps something alive. A run that
   * outlasts its slot still never overlaps the next: the next comes at the first slot after it ends.
   */
  fixedRate?: boolean;
  /** Lets the process exit while waiting for the next run (the timer is unref'd). */
  unref?: boolean;
  /** A task; it may be synchronous, and a throw is reported like a rejection. */
  run: () => unknown;
  onError: (err: unknown) => void;
}): Periodic {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  const nextDelay = (startedMs: number) => {
    if (!opts.fixedRate) return opts.intervalMs;
    return opts.intervalMs - (Math.max(0, performance.now() - startedMs) % opts.intervalMs);
  };
  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      const startedMs = performance.now();
      running = new Promise((resolve) => resolve(opts.run()))
        .catch(opts.onError)
        .finally(() => schedule(nextDelay(startedMs)));
    }, delayMs);
    if (opts.unref) timer.unref();
  };
  schedule(opts.firstRunAfterMs ?? opts.intervalMs);
  return {
    close: async () => {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
