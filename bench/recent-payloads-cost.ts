/**
 * What keeping recent payloads costs alone, per payload: the worker's building of the entries of
 * its steps (`recentPayloadEntries`) and the writer's gathering and writing of them, in this
 * process's CPU and a private Redis's, without the rest of a step. Steps of `--per-step` bench
 * payloads (3 data points each) spread over `--devices` devices; every `--steps-per-write` steps
 * the writer writes what it gathered, as the worker's timer would. `--count 0` measures the
 * harness alone (making the readings), to subtract.
 * `node --no-node-snapshot bench/recent-payloads-cost.ts [--devices N] [--per-step N] [--steps-per-write N] [--writes N] [--count N] [--rounds N]`
 * Defaults: 1,000 devices, 500 payloads per step, 12 steps per write (the end-to-end bench's ~5
 * payloads per device between two writes of a second), 50 writes, 20 kept, 3 measured rounds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startRedis } from '../scripts/lib/local-services.ts';
import { createIngestId } from '../src/ingest/ingest-id.ts';
import { createKeys } from '../src/keys.ts';
import { createLogger } from '../src/log/logger.ts';
import { closeRedis, connectRedis } from '../src/redis/connect.ts';
import type { ConvertedDevice } from '../src/worker/convert.ts';
import { startRecentPayloadWriter } from '../src/recent-payloads/recent-payload-writer.ts';
import { recentPayloadEntries } from '../src/worker/recent-payload-entries.ts';
import type { ResolvedReading } from '../src/worker/resolve.ts';
import { cpuSeconds } from './lib/cpu.ts';
import { BENCH_ENV, deviceName, payloadBody } from './lib/provision.ts';

const { values: args } = parseArgs({
  options: {
    devices: { type: 'string', default: '1000' },
    'per-step': { type: 'string', default: '500' },
    'steps-per-write': { type: 'string', default: '12' },
    writes: { type: 'string', default: '50' },
    count: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '3' },
  },
});
const devices = Array.from({ length: Number(args.devices) }, (_, i) => ({ deviceName: deviceName(i) }));
const perStep = Number(args['per-step']);
const stepsPerWrite = Number(args['steps-per-write']);
const writes = Number(args.writes);
const count = Number(args.count);
const SENSORS = ['Temperature', 'Humidity', 'CO2'];

const dir = mkdtempSync(join(tmpdir(), 'vigil-recent-cost-'));
const server = await startRedis({ dataDir: dir });
const redis = connectRedis(server.url, 'command', 'bench-recent-payloads');
const keys = createKeys('vigil');
await redis.zadd(keys.devices(BENCH_ENV), ...devices.flatMap((d) => [0, d.deviceName]));
const writer = startRecentPayloadWriter({
  redis,
  keys,
  count,
  log: createLogger('warn'),
  flushMs: 3_600_000,
});

let n = 0;
/** One step's entries: its readings, each with a value of every data point in SUCCESS. */
function step() {
  const readings: ResolvedReading[] = [];
  const values: unknown[] = [];
  for (let k = 0; k < perStep; k++, n++) {
    const device = devices[n % devices.length]!;
    const receivedMs = Date.now();
    const body = payloadBody(n % devices.length, n);
    const reading = {
      item: { id: createIngestId(receivedMs), env: BENCH_ENV, receivedMs, body },
      payloadStr: body,
      device,
    } as unknown as ResolvedReading;
    readings.push(reading);
    for (const sensor of SENSORS) values.push({ reading, sensor, status: 'SUCCESS' });
  }
  return recentPayloadEntries(keys, count, readings, [{ values }] as unknown as ConvertedDevice[], []);
}

async function round(): Promise<{ self: number; redis: number }> {
  const pid = server.process?.pid ?? 0;
  const redis0 = cpuSeconds(pid);
  const self0 = process.cpuUsage();
  for (let w = 0; w < writes; w++) {
    for (let s = 0; s < stepsPerWrite; s++) writer.add(step());
    await writer.flush();
  }
  const self = process.cpuUsage(self0);
  const payloads = writes * stepsPerWrite * perStep;
  return { self: (self.user + self.system) / payloads, redis: ((cpuSeconds(pid) - redis0) * 1e6) / payloads };
}

try {
  await round(); // warm-up
  for (let r = 1; r <= Number(args.rounds); r++) {
    const { self, redis: r1 } = await round();
    process.stdout.write(
      `round ${r}: ${count} kept, CPU per payload: this process ${self.toFixed(2)} µs, redis ${r1.toFixed(2)} µs\n`,
    );
  }
} finally {
  await writer.close();
  await closeRedis(redis);
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}
