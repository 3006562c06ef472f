/**
 * `npm run bench`: starts its own Redis and InfluxDB (temporary directory, loopback, free ports),
 * measures the ceilings of this machine and Vigil's figures in one run, prints the table with
 * ratios to the ceilings and targets, and writes bench/results/latest.json.
 * Options: see bench/lib/options.ts (`--quick`, `--soak`, `--only`, `--runs`, `--profile`, …).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startInflux, startRedis, type LocalService } from '../scripts/lib/local-services.ts';
import type { BenchContext } from './lib/context.ts';
import { configureLockstep } from './lib/lockstep.ts';
import { parseOptions, type Scenario } from './lib/options.ts';
import { machine, Report } from './lib/report.ts';
import { runGatewayAccept, runMqttAccept } from './scenarios/accept.ts';
import { runAlerting, runNotifyLatency } from './scenarios/alerting.ts';
import { runBackfill } from './scenarios/backfill.ts';
import { runCeilings } from './scenarios/ceilings.ts';
import { runConsole } from './scenarios/console.ts';
import { runManagement } from './scenarios/management.ts';
import { runDrain } from './scenarios/drain.ts';
import { runFleet } from './scenarios/fleet.ts';
import { runConditions, runLateWrites, runRecentPayloads } from './scenarios/feature-costs.ts';
import { runLorawan } from './scenarios/lorawan.ts';
import { runNotify } from './scenarios/notify.ts';
import { runEndToEnd } from './scenarios/end-to-end.ts';
import { runReadApi } from './scenarios/read-api.ts';
import { runSoak } from './scenarios/soak.ts';
import { runTenants } from './scenarios/tenants.ts';
import { runTimers } from './scenarios/timers.ts';

const LATEST = new URL('results/latest.json', import.meta.url).pathname;

async function main(): Promise<void> {
  const opts = parseOptions(process.argv.slice(2));
  configureLockstep(opts.lockstep);
  const resultsPath = opts.results ?? LATEST;
  const started = Date.now();
  const log = (message: string) =>
    process.stderr.write(`[bench ${((Date.now() - started) / 1000).toFixed(0).padStart(4)} s] ${message}\n`);
  const dir = mkdtempSync(join(tmpdir(), 'vigil-bench-'));
  const services: LocalService[] = [];
  const report = new Report();
  report.loadBaseline(resultsPath);
  const load = loadavg()[0] ?? 0;
  if (load > 0.5)
    report.notes.push(
      `1-minute load average was ${load.toFixed(2)} when the run started: other work on the machine makes figures noisy.`,
    );
  try {
    log(`starting Redis and InfluxDB in ${dir}`);
    // Each one started is stopped below, also when the other failed to start.
    const started = await Promise.allSettled([
      startRedis({ dataDir: join(dir, 'redis') }),
      startInflux({ dataDir: join(dir, 'influx') }),
    ]);
    for (const s of started) if (s.status === 'fulfilled') services.push(s.value);
    const [redis, influx] = started.map((s) => {
      if (s.status === 'rejected') throw s.reason;
      return s.value;
    }) as [LocalService, LocalService];
    const pids = { redis: redis.process?.pid ?? 0, influx: influx.process?.pid ?? 0 };
    const ctx: BenchContext = { opts, redisUrl: redis.url, influxUrl: influx.url, report, pids, log };
    const runners: Record<Scenario, () => Promise<void>> = {
      ceilings: () => runCeilings(ctx),
      gateway: () => runGatewayAccept(ctx),
      mqtt: () => runMqttAccept(ctx),
      e2e: () => runEndToEnd(ctx),
      fleet: () => runFleet(ctx),
      drain: () => runDrain(ctx),
      read: () => runReadApi(ctx),
      console: () => runConsole(ctx),
      management: () => runManagement(ctx),
      notify: () => runNotify(ctx),
      'notify-latency': () => runNotifyLatency(ctx),
      alerting: () => runAlerting(ctx),
      'recent-payloads': () => runRecentPayloads(ctx),
      'late-writes': () => runLateWrites(ctx),
      conditions: () => runConditions(ctx),
      lorawan: () => runLorawan(ctx),
      tenants: () => runTenants(ctx),
      backfill: () => runBackfill(ctx),
      timers: () => runTimers(ctx),
    };
    for (const scenario of opts.scenarios) {
      try {
        await runners[scenario]();
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        log(`${scenario} FAILED: ${message}`);
        report.notes.push(`${scenario} failed: ${message}`);
      }
    }
    if (opts.soak) await runSoak(ctx);
  } finally {
    await Promise.all(services.map((s) => s.stop()));
    rmSync(dir, { recursive: true, force: true });
  }
  const meta = {
    machine: machine(),
    command: `npm run bench${process.argv.length > 2 ? ` -- ${process.argv.slice(2).join(' ')}` : ''}`,
    finishedUTC: new Date().toISOString(),
    durationS: Math.round((Date.now() - started) / 1000),
    options: opts,
  };
  process.stdout.write(`\n${report.table()}\n\n`);
  for (const f of report.figures.values()) if (f.note) process.stdout.write(`- ${f.label}: ${f.note}\n`);
  for (const n of report.notes) process.stdout.write(`- ${n}\n`);
  const m = meta.machine;
  process.stdout.write(
    `\n${String(m.cores)} cores (${String(m.cpu)}), node ${String(m.node)}; ${meta.durationS} s\n`,
  );
  // Figures this run did not measure (the soak in a default run, others with --only) are kept
  // from the previous run, each with its measuredUTC.
  report.write(resultsPath, meta, true);
  process.stdout.write(`written ${resultsPath}\n`);
}

await main();
