/**
 * The lag probe's loop, in its own thread (lag-probe.ts): per probe device, publish one payload,
 * poll its state every POLL_MS until the value's measurement time changes, post now − that time,
 * pause a random 0–MAX_PAUSE_MS, repeat. `now` is taken right after the read.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { connectAsync } from 'mqtt';
import { connectRedis } from '../../src/redis/connect.ts';
import { decodePoint } from '../../src/state/point-record.ts';
import { payloadBody } from './provision.ts';

const POLL_MS = 5;
const MAX_PAUSE_MS = 100;
/** A payload not in state this long after its PUBACK is counted missing, and the next one sent. */
const GIVE_UP_MS = 10_000;

const { redisUrl, mqttUrl, topic, password, probes, field } = workerData as {
  redisUrl: string;
  mqttUrl: string;
  topic: string;
  password: string;
  probes: { device: number; stateKey: string }[];
  field: string;
};

let stopped = false;
const redis = connectRedis(redisUrl, 'command', 'bench-lag');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function updatedMs(stateKey: string): Promise<number | null> {
  const value = await redis.hgetBuffer(stateKey, field);
  return value ? (decodePoint(value)?.updatedMs ?? null) : null;
}

async function probeLoop(
  client: Awaited<ReturnType<typeof connectAsync>>,
  probe: { device: number; stateKey: string },
): Promise<void> {
  let n = 0;
  // The measurement time in state before each publish: the last one seen, read again only after a
  // payload was given up on (it may still arrive).
  let before = await updatedMs(probe.stateKey);
  while (!stopped) {
    await client.publishAsync(topic, payloadBody(probe.device, n++), { qos: 1 });
    const ackedMs = Date.now();
    parentPort?.postMessage({ acked: true });
    for (;;) {
      if (stopped) return;
      const seen = await updatedMs(probe.stateKey);
      const now = Date.now();
      if (seen !== null && seen !== before) {
        parentPort?.postMessage({ lag: now - seen });
        before = seen;
        break;
      }
      if (now - ackedMs > GIVE_UP_MS) {
        parentPort?.postMessage({ missing: true });
        before = await updatedMs(probe.stateKey);
        break;
      }
      await sleep(POLL_MS);
    }
    await sleep(Math.random() * MAX_PAUSE_MS);
  }
}

const client = await connectAsync(mqttUrl, {
  clientId: `bench-lag-${process.pid}-${Date.now()}`,
  clean: true,
  username: 'bench',
  password,
});
const loops = probes.map((p) => probeLoop(client, p).catch(() => undefined));

parentPort?.on('message', (m: string) => {
  if (m !== 'stop') return;
  stopped = true;
  void Promise.all(loops).finally(() => {
    void client.endAsync();
    redis.disconnect();
    parentPort?.close();
  });
});
