/**
 * What one environment's parser isolate costs: builds the isolates of `--envs` environments the way
 * the sandbox does (src/sandbox/isolate-pool.ts), each with the demo's ComfortSensors parser compiled
 * and run once, and prints the milliseconds to build one (isolate and harness, the parser's context,
 * its first call), the process's resident memory per environment, and each isolate's heap. With
 * `--rounds N` the whole is repeated, each round in a fresh process, so the spread shows. The figures choose the defaults of
 * VIGIL_SANDBOX_MAX_ISOLATES and VIGIL_SANDBOX_ISOLATE_IDLE_MS (docs/sandbox.md).
 * `node --no-node-snapshot --expose-gc bench/sandbox-isolates.ts [--envs N] [--rounds N] [--memory-mb N]`
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createLogger } from '../src/log/logger.ts';
import type { EnvIsolate } from '../src/sandbox/env-isolate.ts';
import { createIsolatePool } from '../src/sandbox/isolate-pool.ts';

const { values } = parseArgs({
  options: {
    envs: { type: 'string', default: '200' },
    rounds: { type: 'string', default: '3' },
    'memory-mb': { type: 'string', default: '32' },
    child: { type: 'boolean', default: false },
  },
});
const envs = Number(values.envs);
const rounds = Number(values.rounds);
const memoryLimitMb = Number(values['memory-mb']);
const source = readFileSync(
  new URL('../config/provisioning/demo/definitions/comfort-sensors.js', import.meta.url),
  'utf8',
);
const payload = JSON.stringify({ deviceName: 'd', temperature: 21.5, humidity: 40, battery: 2900 });

const collect = (): void => {
  if (typeof globalThis.gc !== 'function') throw new Error('run with node --expose-gc');
  globalThis.gc();
  globalThis.gc();
};
const mb = (bytes: number) => bytes / 1024 / 1024;
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
const percentile = (xs: number[], p: number) =>
  [...xs].sort((a, b) => a - b)[Math.ceil((xs.length * p) / 100) - 1] ?? NaN;

/** Builds `envs` isolates with the parser compiled and run once; their timings and memory. */
function round(): {
  buildMs: number[];
  warmUs: number;
  rssMbPerEnv: number;
  heapUsedMb: number;
  heapTotalMb: number;
} {
  collect();
  const rssBefore = process.memoryUsage().rss;
  const pool = createIsolatePool({
    limits: { timeoutMs: 1000, memoryLimitMb, maxResultChars: 1024 * 1024 },
    maxContexts: 50,
    maxIsolates: envs,
    idleMs: 3_600_000,
    clock: () => performance.now(),
    log: createLogger('silent'),
    onCatastrophicError: (message) => {
      throw new Error(message);
    },
  });
  const buildMs: number[] = [];
  const isolates: EnvIsolate[] = [];
  for (let i = 0; i < envs; i++) {
    const env = `env-${i}`;
    const started = performance.now();
    const isolate = pool.isolateOf(env);
    const entry = isolate.parser({
      env,
      id: 'def:private:ComfortSensors',
      revision: 1,
      source,
      filename: 'comfort-sensors.js',
    });
    if (entry.kind !== 'ready') throw new Error(entry.failure.message);
    isolate.call(entry, [{ payloadStr: payload, payloadRaw: payload }], true, 1000);
    buildMs.push(performance.now() - started);
    isolates.push(isolate);
  }
  // A warm call for comparison: what the same parser costs once its isolate exists.
  const warm = isolates[0]!;
  const entry = warm.parser({ env: 'env-0', id: 'def:private:ComfortSensors', revision: 1, source });
  const warmStarted = performance.now();
  for (let i = 0; i < 1000; i++)
    if (entry.kind === 'ready') warm.call(entry, [{ payloadStr: payload, payloadRaw: payload }], true, 1000);
  const warmUs = ((performance.now() - warmStarted) / 1000) * 1000;
  collect();
  const rssMbPerEnv = mb(process.memoryUsage().rss - rssBefore) / envs;
  const heaps = isolates.map((isolate) => isolate.heapBytes());
  pool.close();
  return {
    buildMs,
    warmUs,
    rssMbPerEnv,
    heapUsedMb: median(heaps.map((h) => mb(h.used))),
    heapTotalMb: median(heaps.map((h) => mb(h.total))),
  };
}

type Round = ReturnType<typeof round>;

/** A round in a fresh process: the resident memory of a process that already held isolates would hide the cost. */
function roundInChild(): Round {
  const script = fileURLToPath(import.meta.url);
  const args = [...process.execArgv, script, ...process.argv.slice(2), '--child'];
  const child = spawnSync(process.execPath, args, { encoding: 'utf8' });
  if (child.status !== 0) throw new Error(`round failed: ${child.stderr}`);
  return JSON.parse(child.stdout) as Round;
}

if (values.child) {
  process.stdout.write(JSON.stringify(round()));
} else {
  console.log(
    `${envs} environments per round, heap limit ${memoryLimitMb} MB per isolate, node ${process.version}`,
  );
  console.log(
    'round  build ms (median · p95 · max)   warm call µs   RSS MB per env   heap used · reserved MB',
  );
  for (let r = 1; r <= rounds; r++) {
    const x = roundInChild();
    const build = `${median(x.buildMs).toFixed(2)} · ${percentile(x.buildMs, 95).toFixed(2)} · ${Math.max(...x.buildMs).toFixed(2)}`;
    console.log(
      `${String(r).padStart(5)}  ${build.padEnd(31)}  ${x.warmUs.toFixed(1).padStart(12)}   ${x.rssMbPerEnv.toFixed(2).padStart(14)}   ${x.heapUsedMb.toFixed(2)} · ${x.heapTotalMb.toFixed(2)}`,
    );
  }
  console.log(
    `at worst each isolate holds its heap limit (${memoryLimitMb} MB) besides the RSS per env above`,
  );
}
