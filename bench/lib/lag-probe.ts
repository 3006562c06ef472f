/**
 * Accept-to-state lag, sampled: every `intervalMs` the probe reads the packed state of Temperature
 * (`Temperature|p`) of a few devices for the measurement time of the value in state, which without
 * a device-supplied time is the moment the gateway accepted the payload. When it changes, the
 * probe records now − that time: how long after acceptance the value became visible in state.
 * Resolution: `intervalMs` (an upper bound). The polling runs in its own thread, so the load
 * generators' event loop does not delay it.
 */
import { Worker } from 'node:worker_threads';
import { createKeys, STATE_FIELD, stateField } from '../../src/state/keys.ts';
import { BENCH_ENV, deviceName } from './provision.ts';

export interface LagProbe {
  /** Lags seen so far, ms. */
  samples(): number[];
  /** Clears the samples (end of warm-up). */
  reset(): void;
  stop(): Promise<void>;
}

export function startLagProbe(opts: {
  redisUrl: string;
  keyPrefix: string;
  devices: number[];
  intervalMs?: number;
}): LagProbe {
  const keys = createKeys(opts.keyPrefix);
  // The polling runs in a thread of its own (lag-probe-thread.ts), away from the load generators.
  const thread = new Worker(new URL('./lag-probe-thread.ts', import.meta.url), {
    workerData: {
      redisUrl: opts.redisUrl,
      stateKeys: opts.devices.map((d) => keys.deviceState(BENCH_ENV, deviceName(d))),
      field: stateField('Temperature', STATE_FIELD.packed),
      intervalMs: opts.intervalMs ?? 10,
    },
  });
  let samples: number[] = [];
  thread.on('message', (lags: number[]) => samples.push(...lags));
  thread.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
  return {
    samples: () => samples,
    reset: () => {
      samples = [];
    },
    async stop() {
      thread.postMessage('stop');
      const timeout = setTimeout(() => void thread.terminate(), 2000);
      await exited;
      clearTimeout(timeout);
    },
  };
}
