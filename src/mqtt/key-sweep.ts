/**
 * Revocation for long-lived MQTT connections: a client that connected with a key as password, or
 * subscribed to a key's topics, keeps its connection after the key is revoked unless someone looks
 * again. The sweep re-checks every such key an interval after the previous pass and closes the
 * clients of keys that are no longer valid, so a revocation reaches them within interval + a pass
 * + cache time.
 */
import type { Client } from 'aedes';
import { startPeriodic } from '../lib/periodic.ts';

export interface KeySweep {
  track(client: Client, apiKey: string): void;
  forget(client: Client): void;
  /** One pass now (tests); resolves when done. */
  sweep(): Promise<void>;
  close(): void;
}

export function createKeySweep(opts: {
  intervalMs: number;
  /** True/false when known; undefined when it cannot be told now (Redis down): nothing is closed. */
  isValid(apiKey: string): Promise<boolean | undefined>;
}): KeySweep {
  const tracked = new Map<Client, Set<string>>();
  let running: Promise<void> | undefined;

  const sweep = (): Promise<void> => {
    if (running) return running;
    const pass = (async () => {
      for (const client of tracked.keys()) if (client.closed) tracked.delete(client);
      const keys = new Set([...tracked.values()].flatMap((set) => [...set]));
      const invalid = new Set<string>();
      for (const key of keys) {
        if ((await opts.isValid(key).catch(() => undefined)) === false) invalid.add(key);
      }
      for (const [client, set] of tracked) {
        if ([...set].some((k) => invalid.has(k))) {
          tracked.delete(client);
          client.close();
        }
      }
    })();
    // Cleared after the assignment: a pass with nothing to await finishes synchronously, and a
    // `finally` inside it would run before `running` is set, leaving it set for good.
    running = pass;
    void pass.finally(() => {
      if (running === pass) running = undefined;
    });
    return pass;
  };
  const sweeping = startPeriodic({
    intervalMs: opts.intervalMs,
    unref: true,
    run: sweep,
    // A pass does not fail: a key that cannot be checked now counts as unknown and closes nothing.
    // One that did would be a bug; with no log to go to, it fails the process as it always did.
    onError: (err) =>
      process.nextTick(() => {
        throw err;
      }),
  });

  return {
    track(client, apiKey) {
      const set = tracked.get(client) ?? new Set<string>();
      set.add(apiKey);
      tracked.set(client, set);
    },
    forget: (client) => tracked.delete(client),
    sweep,
    /** Stops the sweeps; a pass in progress finishes by itself (it only closes clients). */
    close: () => void sweeping.close(),
  };
}
