/**
 * The lag probe's polling loop, in its own thread: the bench's main thread also runs the load
 * generators, and a busy event loop there would delay the probe's timers and add its own delay
 * to the measured lag. `now` is taken here, right after the read.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { connectRedis } from '../../src/redis/connect.ts';
import { decodePoint } from '../../src/state/point-record.ts';

const { redisUrl, stateKeys, field, intervalMs } = workerData as {
  redisUrl: string;
  stateKeys: string[];
  field: string;
  intervalMs: number;
};
const redis = connectRedis(redisUrl, 'command', 'bench-lag');
const last = new Array<number | null>(stateKeys.length).fill(null);
let busy = false;
const timer = setInterval(() => {
  if (busy) return;
  busy = true;
  const p = redis.pipeline();
  for (const k of stateKeys) p.hgetBuffer(k, field);
  p.exec()
    .then((results) => {
      const now = Date.now();
      const lags: number[] = [];
      results?.forEach(([err, value], i) => {
        if (err || !Buffer.isBuffer(value)) return;
        const updatedMs = decodePoint(value)?.updatedMs ?? null;
        if (updatedMs === null) return;
        if (last[i] !== null && updatedMs !== last[i]) lags.push(now - updatedMs);
        last[i] = updatedMs;
      });
      if (lags.length > 0) parentPort?.postMessage(lags);
    })
    .catch(() => undefined)
    .finally(() => (busy = false));
}, intervalMs);

parentPort?.on('message', (m: string) => {
  if (m !== 'stop') return;
  clearInterval(timer);
  redis.disconnect();
  parentPort?.close();
});
