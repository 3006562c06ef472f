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
  run: () => Promise<unknown>;
  onError: (err: unknown) => void;
}): Periodic {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  let running: Promise<unknown> = Promise.resolve();
  const schedule = (delayMs: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = opts
        .run()
        .catch(opts.onError)
        .finally(() => schedule(opts.intervalMs));
    }, delayMs);
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
