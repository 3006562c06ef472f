/**
 * Read API under ingestion: MQTT ingestion paced at half the sustained end-to-end rate while
 * autocannon asks `sensors/details` (one data point with last24Hours) and `sensors/batchList`
 * (100 devices) with a bearer token. The worker runs in its own process unless `--single`. CPU per
 * request counts every process, ingestion included.
 */
import type { BenchContext } from '../lib/context.ts';
import { sleep, startEndToEndVigil } from '../lib/context.ts';
import { describePerUnit, snapshot } from '../lib/cpu.ts';
import { runHttpLoad } from '../lib/http-load.ts';
import { commandStats, describeTopCommands } from '../lib/redis-stats.ts';
import { deviceName } from '../lib/provision.ts';
import { Ingestion, processedCount, waitProcessed } from './end-to-end.ts';

const READ_CONNECTIONS = 10;

/**
 * Half the sustained end-to-end rate of this run, else of `--e2e-rate`, else of the previous run,
 * else 5,000/s.
 */
export function halfMaxRate(ctx: BenchContext): number {
  const thisRun = ctx.report.figures.get('e2e.sustained')?.value ?? 0;
  const measured = thisRun > 0 ? thisRun : (ctx.opts.e2eRate ?? ctx.report.get('e2e.sustained')?.value ?? 0);
  return Math.round((measured > 0 ? measured : 10_000) / 2);
}

export async function runReadApi(ctx: BenchContext): Promise<void> {
  const { opts, report } = ctx;
  const rate = halfMaxRate(ctx);
  // As in the end-to-end scenario (and a 2-core deployment), the worker in a process of its own
  // unless --single: one event loop cannot carry the ingestion's worker and the API's requests.
  const bv = await startEndToEndVigil(ctx, { label: 'read' });
  const { worker, cpuPids } = bv;
  const ingestion = new Ingestion(bv);
  try {
    ctx.log(`read API: ingestion at ${rate} payloads/s`);
    const total = opts.warmupS * 2 + 2 * opts.runs * opts.measureS + 10;
    await ingestion.start(rate, total, opts.devices);
    await sleep(opts.warmupS * 1000);
    const headers = { authorization: `Bearer ${bv.provisioned.token}` };
    const base = `http://127.0.0.1:${bv.vigil.ports.api}`;
    const batch = JSON.stringify({ devices: Array.from({ length: 100 }, (_, i) => deviceName(i)) });
    const scenarios = [
      {
        id: 'read.details',
        label: 'read API sensors/details',
        url: `${base}/sensors/details`,
        body: (n: number) =>
          JSON.stringify({ deviceName: deviceName(n % opts.devices), sensorName: 'Temperature' }),
        target: { min: 2000 },
        p99Target: { max: 25 },
        rate: opts.readRate,
      },
      {
        id: 'read.batchList',
        label: 'read API sensors/batchList (100 devices)',
        url: `${base}/sensors/batchList`,
        body: () => batch,
      },
    ];
    for (const s of scenarios) {
      ctx.log(`read API: ${s.label}`);
      const warm = await runHttpLoad({
        url: s.url,
        connections: READ_CONNECTIONS,
        durationS: opts.warmupS,
        headers,
        body: s.body,
        rate: s.rate,
      });
      if (warm.okPerSecond === 0) throw new Error(`${s.label}: no 2xx answer (${warm.non2xx} non-2xx)`);
      const rates: number[] = [];
      const p99: number[] = [];
      const cpu: string[] = [];
      for (let r = 0; r < opts.runs; r++) {
        const before = snapshot(cpuPids);
        const redisBefore = await commandStats(ctx.redisUrl);
        const processed = await processedCount(worker);
        const res = await runHttpLoad({
          url: s.url,
          connections: READ_CONNECTIONS,
          durationS: opts.measureS,
          headers,
          body: s.body,
          rate: s.rate,
        });
        rates.push(res.okPerSecond);
        p99.push(res.p99Ms);
        const payloads = ((await processedCount(worker)) - processed) / opts.measureS;
        const requests = res.okPerSecond * opts.measureS;
        const redisTop = describeTopCommands(
          redisBefore,
          await commandStats(ctx.redisUrl),
          requests,
          'request',
        );
        cpu.push(
          `run ${r + 1}: ${describePerUnit(before, snapshot(cpuPids), requests, 'request')} (ingestion included: ${Math.round(payloads)} payloads/s processed meanwhile); ${redisTop}`,
        );
      }
      report.notes.push(...cpu.map((c) => `${s.label}, ${c}`));
      report.add({
        id: s.id,
        label: `${s.label} (${s.rate ? `${s.rate} req/s sent, ` : ''}ingesting ${rate}/s)`,
        unit: 'req/s',
        runs: rates,
        ceiling: 'ceiling.express',
        ...(s.target ? { target: s.target } : {}),
      });
      report.add({
        id: `${s.id}.p99`,
        label: `${s.label} p99`,
        unit: 'ms',
        runs: p99,
        ...(s.p99Target ? { target: s.p99Target } : {}),
      });
    }
    await ingestion.stop();
    const caughtUp = await waitProcessed(worker, ingestion.accepted(), 60_000);
    report.notes.push(
      `read API: ingestion at ${rate}/s meanwhile; ${caughtUp ? 'all accepted payloads processed afterwards' : 'the worker had NOT caught up 60 s after'}.`,
    );
  } finally {
    await ingestion.stop();
    await bv.stop();
  }
}
