/**
 * The worker's CPU per payload for its processing steps alone (pre-parse → parse → convert → state
 * → history → ingestion log), without the queue, the broker or the load generator: starts a private
 * Redis and InfluxDB, provisions the bench environment, and runs `--steps` steps of `--payloads`
 * payloads over `--devices` devices each (defaults: a drain step, 1,200 payloads of 250 devices),
 * with history finishing in the background as in the worker. Prints this process's CPU µs per
 * payload (all its threads: the parser isolate and V8's GC helpers too) and Redis's and influxd's.
 * Late writes (history versions and late-hour marks) are on as in the worker; `--no-late-writes`
 * turns them off, to compare their cost.
 * `--recent-payloads N`: recent payloads kept per device, as VIGIL_DEVICE_RECENT_PAYLOADS (default 20;
 * 0: none).
 * `--conditions`: every rule waits and every data point has a stale rule (lib/provision.ts
 * WAITING_SPEC).
 * `node --no-node-snapshot bench/worker-step.ts [--steps N] [--payloads N] [--devices N] [--rounds N] [--no-late-writes] [--conditions] [--recent-payloads N]`
 * With `--cpu-prof` on the node command line, the profile covers the measured steps' process.
 */
import { queueCommands } from '../src/redis/command.ts';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { startInflux, startRedis } from '../scripts/lib/local-services.ts';
import { createInfluxClient } from '../src/history/influx-client.ts';
import { createHistoryWriter } from '../src/history/history-writer.ts';
import { ensureHistorySchema } from '../src/history/schema.ts';
import { createIngestLog } from '../src/ingest/ingest-log.ts';
import { createIngestId } from '../src/ingest/ingest-id.ts';
import { createLogger } from '../src/log/logger.ts';
import type { IngestItem } from '../src/domain/ingest-item.ts';
import { closeRedis, connectRedis } from '../src/redis/connect.ts';
import { createSandbox } from '../src/sandbox/sandbox.ts';
import { createKeys } from '../src/keys.ts';
import { createStateStore } from '../src/state/state-store.ts';
import { createTenancyStore } from '../src/tenancy/tenancy-store.ts';
import { createCatalog } from '../src/tenancy/catalog.ts';
import { createIngestProcessor } from '../src/worker/ingest-processor.ts';
import { startRecentPayloadWriter } from '../src/recent-payloads/recent-payload-writer.ts';
import { createLateWrites } from '../src/worker/late-writes.ts';
import { cpuSeconds } from './lib/cpu.ts';
import { BENCH_ENV, deviceName, payloadBody, provisionBench } from './lib/provision.ts';

const { values: args } = parseArgs({
  options: {
    steps: { type: 'string', default: '100' },
    payloads: { type: 'string', default: '1200' },
    devices: { type: 'string', default: '250' },
    rounds: { type: 'string', default: '3' },
    'no-late-writes': { type: 'boolean', default: false },
    conditions: { type: 'boolean', default: false },
    'recent-payloads': { type: 'string', default: '20' },
  },
});
const steps = Number(args.steps);
const perStep = Number(args.payloads);
const devices = Number(args.devices);
const rounds = Number(args.rounds);
/** History writes still running while the next step is processed (the worker allows 8 per loop). */
const IN_FLIGHT = 8;

const dir = mkdtempSync(join(tmpdir(), 'vigil-worker-step-'));
const [redisServer, influxServer] = await Promise.all([
  startRedis({ dataDir: join(dir, 'redis') }),
  startInflux({ dataDir: join(dir, 'influx') }),
]);
const log = createLogger('warn');
const keys = createKeys('ws:');
const redis = connectRedis(redisServer.url, 'command', 'worker-step');
const influx = createInfluxClient({ url: influxServer.url, database: 'ws' });
try {
  await ensureHistorySchema(influx, { rawRetention: 'INF', rollupRetention: 'INF', resampleEvery: '1h' });
  await provisionBench(redisServer.url, 'ws:', devices, { conditions: args.conditions });
  const sandbox = createSandbox({ timeoutMs: 50, memoryLimitMb: 32, log });
  const history = createHistoryWriter({ influx, log });
  const recentCount = Number(args['recent-payloads']);
  const recentWriter = startRecentPayloadWriter({ redis, keys, count: recentCount, log });
  const processItems = createIngestProcessor({
    catalog: createCatalog({ tenancy: createTenancyStore({ redis, keys }) }),
    sandbox,
    state: createStateStore({ redis, keys, eventsCap: 1000 }),
    history,
    ingestLog: createIngestLog({ redis, keys, size: 1000 }),
    log,
    defaultAvailabilityMinutes: 60,
    recentPayloads: { keys, count: recentCount, writer: recentWriter },
    ...(args['no-late-writes'] ? {} : { lateWrites: createLateWrites({ keys, resampleEveryMs: 3_600_000 }) }),
  });
  let seq = 0;
  const items = (): IngestItem[] => {
    const now = Date.now();
    return Array.from({ length: perStep }, () => {
      const n = seq++;
      const device = n % devices;
      return {
        id: createIngestId(now),
        env: BENCH_ENV,
        gateway: 'submit',
        via: 'mqtt',
        receivedMs: now,
        body: payloadBody(device, Math.floor(n / devices)),
        bodyIsHex: false,
        // What the gateway read from the body while checking it.
        nameInBody: deviceName(device),
        client: 'bench',
      };
    });
  };
  const pids = { redis: redisServer.process?.pid ?? 0, influx: influxServer.process?.pid ?? 0 };
  const run = async (count: number) => {
    const finishing = new Set<Promise<void>>();
    for (let s = 0; s < count; s++) {
      const result = await processItems(items());
      const done: Promise<void> = (result.written ?? Promise.resolve([])).then(async (late) => {
        const multi = redis.multi();
        queueCommands(multi, [...(result.logCommands ?? []), ...late]);
        await multi.exec();
        result.acknowledged?.();
        finishing.delete(done);
      });
      finishing.add(done);
      while (finishing.size >= IN_FLIGHT) await Promise.race(finishing);
    }
    await Promise.all(finishing);
    await recentWriter.flush();
  };
  await run(10); // warm-up: caches filled, code optimised
  for (let r = 0; r < rounds; r++) {
    const cpu0 = process.cpuUsage();
    const other0 = { redis: cpuSeconds(pids.redis), influx: cpuSeconds(pids.influx) };
    const wall0 = performance.now();
    await run(steps);
    const cpu = process.cpuUsage(cpu0);
    const payloads = steps * perStep;
    const us = (x: number) => ((x * 1e6) / payloads).toFixed(1);
    process.stdout.write(
      `round ${r + 1}: ${payloads} payloads in ${((performance.now() - wall0) / 1000).toFixed(1)} s; ` +
        `CPU per payload: worker ${((cpu.user + cpu.system) / payloads).toFixed(1)} µs (system ${(cpu.system / payloads).toFixed(1)}), ` +
        `redis ${us(cpuSeconds(pids.redis) - other0.redis)} µs, influx ${us(cpuSeconds(pids.influx) - other0.influx)} µs\n`,
    );
  }
  await history.close();
  sandbox.close();
  await recentWriter.close();
} finally {
  await closeRedis(redis);
  await Promise.all([redisServer.stop(), influxServer.stop()]);
  rmSync(dir, { recursive: true, force: true });
}
