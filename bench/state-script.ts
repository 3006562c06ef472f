/**
 * Redis CPU of the state script per device, alone: starts a private Redis, applies `--calls` calls
 * of 64 devices with one 4-data-point value each (every value newer than the last, as under steady
 * ingestion; `--payloads N` such values per device and call) and prints Redis's own time per call
 * from INFO commandstats.
 * `node --no-node-snapshot bench/state-script.ts [--calls N] [--payloads N] [--lua other.lua …]`: each `--lua`
 * script (another version, e.g. `git show REV:src/state/lua/apply-readings.lua`) gets the same
 * input, taking turns with the current one — a version that takes the same keys and argument as
 * this one's state store (for one that does not, compare whole workers: bench/worker-step.ts).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Redis as IORedis } from 'ioredis';
import { startRedis } from '../scripts/lib/local-services.ts';
import { createKeys } from '../src/keys.ts';
import {
  composeStateScript,
  createStateStore,
  DEVICES_PER_CALL,
  type DeviceReadings,
} from '../src/state/state-store.ts';
import { commandStats } from './lib/redis-stats.ts';

const { values: args } = parseArgs({
  options: {
    calls: { type: 'string', default: '3000' },
    payloads: { type: 'string', default: '1' },
    lua: { type: 'string', multiple: true },
    config: { type: 'string', multiple: true },
  },
});
const calls = Number(args.calls);
/** Payloads per device and call: the e2e bench's devices send ~3 per worker step. */
const payloads = Number(args.payloads);
const BLOCK = 50;
const scripts = [
  new URL('../src/state/lua/apply-readings.lua', import.meta.url).pathname,
  ...(args.lua ?? []),
];
const dir = mkdtempSync(join(tmpdir(), 'vigil-state-script-'));
const redis = await startRedis({ dataDir: dir });
try {
  // --config name=value: a Redis setting for the run (e.g. hash-max-listpack-entries=0).
  const admin = new IORedis(redis.url);
  for (const c of args.config ?? []) await admin.config('SET', ...(c.split('=', 2) as [string, string]));
  admin.disconnect();
  const meta = {
    statuses: ['WARNING' as const],
    descriptions: ['Above 25 °C'],
    rulesId: 'r1',
    suppressed: false,
    sensorType: 'tempC',
  };
  const sensors = new Map(['Temperature', 'Humidity', 'Illuminance', 'Battery'].map((s) => [s, meta]));
  const batch = (call: number): DeviceReadings[] =>
    Array.from({ length: DEVICES_PER_CALL }, (_, d) => {
      const timeMs = 1_800_000_000_000 + call * 1000;
      return {
        env: 'bench',
        device: `device_${d}`,
        displayName: `Device ${d}`,
        contactMs: timeMs,
        timeoutMs: 600_000,
        sensors,
        values: Array.from({ length: payloads }, (_, k) =>
          [...sensors.keys()].map((sensor, i) => {
            const v = 20 + ((call + d + i + k) % 10) / 10;
            const text = String(v);
            return {
              sensor,
              timeMs: timeMs + k,
              offsetNs: i,
              valueJson: text,
              currentValue: `${text} °C`,
              outcomes: [-1, -1],
              receivedMs: 0,
              number: v,
            };
          }),
        ).flat(),
      };
    });
  // One connection, store and key prefix per script; the scripts take turns in blocks of BLOCK
  // calls, so the machine's drift spreads evenly over them.
  const runs = scripts.map((file, i) => {
    const client = new IORedis(redis.url);
    // The store defines its command only when the connection has none yet; like the store, the
    // script gets the alarm index's functions in front of it.
    client.defineCommand('vigilApplyReadings', { lua: composeStateScript(readFileSync(file, 'utf8')) });
    const store = createStateStore({ redis: client, keys: createKeys(`bench${i}`), eventsCap: 1000 });
    return { file, client, store, usec: 0, call: 0 };
  });
  for (const r of runs) for (; r.call < 200; r.call++) await r.store.applyReadings(batch(r.call), Date.now());
  for (let done = 0; done < calls; done += BLOCK) {
    for (const r of runs) {
      const before = (await commandStats(redis.url)).get('evalsha')?.usec ?? 0;
      for (let c = 0; c < BLOCK; c++, r.call++) await r.store.applyReadings(batch(r.call), Date.now());
      r.usec += ((await commandStats(redis.url)).get('evalsha')?.usec ?? 0) - before;
    }
  }
  for (const r of runs) {
    const n = r.call - 200;
    const state = createKeys(`bench${runs.indexOf(r)}`).deviceState('bench', 'device_0');
    const [encoding, fields] = await Promise.all([r.client.object('ENCODING', state), r.client.hlen(state)]);
    process.stdout.write(
      `${r.file}: Redis ${(r.usec / n).toFixed(0)} µs per call of ${DEVICES_PER_CALL} devices × ${payloads} × 4 data points, ` +
        `${(r.usec / (n * DEVICES_PER_CALL)).toFixed(1)} µs per device (${n} calls; state hash: ${fields} fields, ${String(encoding)})\n`,
    );
    r.client.disconnect();
  }
} finally {
  await redis.stop();
  rmSync(dir, { recursive: true, force: true });
}
