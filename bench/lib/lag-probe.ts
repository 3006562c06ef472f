/**
 * Accept-to-state lag, sampled: every `intervalMs` the probe reads `Temperature|u` of a few devices
 * (the measurement time of the value in state, which without a device-supplied time is the moment
 * the gateway accepted the payload). When it changes, the probe records now − u: how long after
 * acceptance the value became visible in state. Resolution: `intervalMs` (an upper bound).
 */
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { createKeys, stateField } from '../../src/state/keys.ts';
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
  const redis = connectRedis(opts.redisUrl, 'command', 'bench-lag');
  const keys = createKeys(opts.keyPrefix);
  const field = stateField('Temperature', 'u');
  const stateKeys = opts.devices.map((d) => keys.deviceState(BENCH_ENV, deviceName(d)));
  const last = new Array<string | null>(stateKeys.length).fill(null);
  let samples: number[] = [];
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    const p = redis.pipeline();
    for (const k of stateKeys) p.hget(k, field);
    p.exec()
      .then((results) => {
        const now = Date.now();
        results?.forEach(([err, value], i) => {
          if (err || typeof value !== 'string') return;
          if (last[i] !== null && value !== last[i]) samples.push(now - Number(value));
          last[i] = value;
        });
      })
      .catch(() => undefined)
      .finally(() => (busy = false));
  }, opts.intervalMs ?? 10);
  return {
    samples: () => samples,
    reset: () => {
      samples = [];
    },
    async stop() {
      clearInterval(timer);
      await closeRedis(redis);
    },
  };
}
