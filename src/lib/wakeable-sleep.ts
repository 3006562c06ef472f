/**
 * Sleeps that can be ended early: a loop waits for a timeout or for news (a lease change, a
 * shutdown), whichever comes first. A sleep that ends leaves nothing behind, so a loop that
 * sleeps forever does not accumulate waiters.
 */
export interface WakeableSleep {
  /** Resolves after `ms`, or at the next `wakeAll()`. */
  sleep: (ms: number) => Promise<void>;
  /** Ends every sleep in progress now. */
  wakeAll: () => void;
}

export function createWakeableSleep(): WakeableSleep {
  const sleeping = new Set<() => void>();
  return {
    sleep: (ms) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          sleeping.delete(done);
          resolve();
        }
        sleeping.add(done);
      }),
    wakeAll: () => {
      for (const done of [...sleeping]) done();
    },
  };
}
