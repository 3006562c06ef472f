/**
 * Accept-to-state lag, per payload: LAG_PROBE_DEVICES devices of their own (provisioned beside the
 * load's, never in it) each publish one payload over MQTT QoS 1, wait until its value is in state
 * (`Temperature|p`, whose measurement time — with no device-supplied time — is the moment the
 * gateway accepted the payload), record now − that time, pause a random 0–100 ms and publish the
 * next. So every sample is one payload's own lag, accepted at a random moment of the worker's step
 * cycle, and none is hidden by a newer value of the same device (an earlier probe read the loaded
 * devices' newest value, which understated the lag of the older payloads of a step).
 * Resolution: the 5 ms poll. The probe runs in its own thread, so the load generators' event loop
 * does not delay it.
 */
import { Worker } from 'node:worker_threads';
import { STATE_FIELD, stateField } from '../../src/state/state-keys.ts';
import { createKeys } from '../../src/keys.ts';
import { BENCH_ENV, deviceName } from './provision.ts';

/** Devices the probe publishes for, provisioned after the load's `devices`. */
export const LAG_PROBE_DEVICES = 8;

export interface LagProbe {
  /** Lags seen so far, ms. */
  samples(): number[];
  /** Probe payloads acknowledged (PUBACK) since the start: they count as accepted. */
  acked(): number;
  /** Probe payloads not in state 10 s after their PUBACK, so far. */
  missing(): number;
  /** Clears the samples (end of warm-up). */
  reset(): void;
  stop(): Promise<void>;
}

export function startLagProbe(opts: {
  redisUrl: string;
  keyPrefix: string;
  mqttUrl: string;
  topic: string;
  /** The API key the probe connects with (the broker's password). */
  password: string;
  /** The load's device count: the probe's devices are the next LAG_PROBE_DEVICES indexes. */
  loadDevices: number;
}): LagProbe {
  const keys = createKeys(opts.keyPrefix);
  const devices = Array.from({ length: LAG_PROBE_DEVICES }, (_, i) => opts.loadDevices + i);
  const thread = new Worker(new URL('./lag-probe-thread.ts', import.meta.url), {
    workerData: {
      redisUrl: opts.redisUrl,
      mqttUrl: opts.mqttUrl,
      topic: opts.topic,
      password: opts.password,
      probes: devices.map((d) => ({ device: d, stateKey: keys.deviceState(BENCH_ENV, deviceName(d)) })),
      field: stateField('Temperature', STATE_FIELD.packed),
    },
  });
  let samples: number[] = [];
  let missing = 0;
  let acked = 0;
  thread.on('message', (m: { lag?: number; missing?: true; acked?: true }) => {
    if (m.lag !== undefined) samples.push(m.lag);
    if (m.acked) acked++;
    if (m.missing) missing++;
  });
  thread.on('error', () => undefined);
  const exited = new Promise<void>((resolve) => thread.once('exit', () => resolve()));
  return {
    samples: () => samples,
    acked: () => acked,
    missing: () => missing,
    reset: () => {
      samples = [];
      missing = 0;
    },
    async stop() {
      thread.postMessage('stop');
      const timeout = setTimeout(() => void thread.terminate(), 2000);
      await exited;
      clearTimeout(timeout);
    },
  };
}
