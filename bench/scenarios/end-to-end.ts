/**
 * End-to-end over MQTT with every feature on (sandbox parser, conversion, thresholds, events,
 * ingestion log, history): all roles in one Vigil process.
 *  1. Saturation: publish as fast as the windows allow; the processed rate is the capacity.
 *  2. Sustained: publish at 90 % of that for `sustainS` seconds; the figure counts only if the
 *     backlog (accepted − processed) did not grow by more than 2 s worth of payloads, else the
 *     rate is lowered and the window repeated (bounded). Lag is sampled meanwhile (lag-probe.ts).
 */
import { GATEWAY_PATHS } from '../../src/queue/jobs.ts';
import type { BenchContext } from '../lib/context.ts';
import { MQTT_CONNECTIONS, MQTT_WINDOW, sleep, startBenchVigil, type BenchVigil } from '../lib/context.ts';
import { startLagProbe } from '../lib/lag-probe.ts';
import { startMqttLoad, type MqttLoad } from '../lib/mqtt-load.ts';
import { DATA_POINTS_PER_PAYLOAD, payloadBody } from '../lib/provision.ts';
import { percentile } from '../lib/stats.ts';
import type { VigilProcess } from '../lib/vigil-process.ts';

/** Payloads the worker has finished (vigil_worker_payloads_total). */
export async function processedCount(vigil: VigilProcess): Promise<number> {
  return (await vigil.metrics()).get('vigil_worker_payloads_total') ?? 0;
}

/** Waits until `processed` reaches `accepted` (or `timeoutMs` passes); true when it did. */
export async function waitProcessed(
  vigil: VigilProcess,
  accepted: number,
  timeoutMs: number,
): Promise<boolean> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if ((await processedCount(vigil)) >= accepted) return true;
    await sleep(200);
  }
  return false;
}

/** An MQTT load against a bench Vigil whose payload sequence continues across loads. */
export class Ingestion {
  private seq = 0;
  private ackedBefore = 0;
  private load: MqttLoad | undefined;
  private readonly bv: BenchVigil;
  constructor(bv: BenchVigil) {
    this.bv = bv;
  }

  /** Starts publishing (`rate` undefined = full speed) for at most `maxSeconds`. */
  async start(rate: number | undefined, maxSeconds: number, devices: number): Promise<void> {
    const base = this.seq;
    this.load = await startMqttLoad({
      url: `mqtt://127.0.0.1:${this.bv.vigil.ports.mqtt}`,
      topic: `${GATEWAY_PATHS.submit}/${this.bv.provisioned.apiKey}`,
      body: (s) => {
        const n = base + s;
        this.seq = n + 1;
        return payloadBody(n % devices, Math.floor(n / devices));
      },
      connections: MQTT_CONNECTIONS,
      window: MQTT_WINDOW,
      ...(rate === undefined ? {} : { ratePerSecond: rate }),
      maxSeconds,
    });
  }

  /** PUBACKs over every load so far. */
  accepted(): number {
    return this.ackedBefore + (this.load?.acked() ?? 0);
  }

  async stop(): Promise<void> {
    if (!this.load) return;
    const { acked } = await this.load.stop();
    this.ackedBefore += acked;
    this.load = undefined;
  }
}

interface Window {
  processedPerSecond: number;
  acceptedPerSecond: number;
  backlogGrowth: number;
}

/** Counts accepted and processed payloads over `seconds`. */
async function measureWindow(vigil: VigilProcess, ingestion: Ingestion, seconds: number): Promise<Window> {
  const p0 = await processedCount(vigil);
  const a0 = ingestion.accepted();
  const t0 = Date.now();
  await sleep(seconds * 1000);
  const p1 = await processedCount(vigil);
  const a1 = ingestion.accepted();
  const elapsed = (Date.now() - t0) / 1000;
  return {
    processedPerSecond: (p1 - p0) / elapsed,
    acceptedPerSecond: (a1 - a0) / elapsed,
    backlogGrowth: a1 - p1 - (a0 - p0),
  };
}

export async function runEndToEnd(ctx: BenchContext): Promise<void> {
  const { opts, report } = ctx;
  const bv = await startBenchVigil(ctx, 'gateway,mqtt,worker,scheduler,api');
  const { vigil } = bv;
  const ingestion = new Ingestion(bv);
  try {
    ctx.log('end-to-end: saturation (publish at full speed)');
    await ingestion.start(undefined, opts.warmupS + opts.runs * opts.measureS + 5, opts.devices);
    await sleep(opts.warmupS * 1000);
    const saturated: number[] = [];
    const acceptedSat: number[] = [];
    for (let r = 0; r < opts.runs; r++) {
      const w = await measureWindow(vigil, ingestion, opts.measureS);
      saturated.push(w.processedPerSecond);
      acceptedSat.push(w.acceptedPerSecond);
    }
    await ingestion.stop();
    report.add({
      id: 'e2e.saturated',
      label: 'end-to-end processed, publishers at full speed',
      unit: 'payloads/s',
      runs: saturated,
    });
    report.add({
      id: 'e2e.saturated.accepted',
      label: 'end-to-end accepted meanwhile',
      unit: 'payloads/s',
      runs: acceptedSat,
    });
    ctx.log('end-to-end: waiting for the saturation backlog to drain');
    await waitProcessed(vigil, ingestion.accepted(), 300_000);

    let rate = Math.round(0.9 * Math.min(...saturated));
    const attempts = opts.quick ? 1 : 2;
    for (let attempt = 0; attempt < attempts; attempt++) {
      ctx.log(`end-to-end: sustained at ${rate} payloads/s for ${opts.sustainS} s`);
      const probe = startLagProbe({
        redisUrl: ctx.redisUrl,
        keyPrefix: bv.settings.keyPrefix,
        devices: [0, 101, 202, 303, 404, 505, 606, 707],
      });
      await ingestion.start(rate, opts.warmupS + opts.sustainS + 5, opts.devices);
      await sleep(opts.warmupS * 1000);
      probe.reset();
      const w = await measureWindow(vigil, ingestion, opts.sustainS);
      const lags = [...probe.samples()];
      await probe.stop();
      await ingestion.stop();
      const grew = w.backlogGrowth > 2 * rate;
      const last = attempt === attempts - 1;
      if (!grew || last) {
        const note = `offered ${rate}/s; backlog ${grew ? 'GREW' : 'changed'} by ${Math.round(w.backlogGrowth)} payloads over the window; ${lags.length} lag samples`;
        report.add({
          id: 'e2e.sustained',
          label: 'end-to-end sustained (backlog flat)',
          unit: 'payloads/s',
          runs: [grew ? 0 : w.processedPerSecond],
          target: { min: 15_000 },
          note,
        });
        report.add({
          id: 'e2e.points',
          label: 'end-to-end data points sustained',
          unit: 'points/s',
          runs: [grew ? 0 : w.processedPerSecond * DATA_POINTS_PER_PAYLOAD],
          target: { min: 60_000 },
        });
        report.add({
          id: 'e2e.lag.p50',
          label: 'accept-to-state lag p50',
          unit: 'ms',
          runs: [percentile(lags, 50)],
        });
        report.add({
          id: 'e2e.lag.p99',
          label: 'accept-to-state lag p99',
          unit: 'ms',
          runs: [percentile(lags, 99)],
          target: { max: 1000 },
        });
        break;
      }
      ctx.log(`end-to-end: backlog grew by ${Math.round(w.backlogGrowth)} at ${rate}/s; lowering the rate`);
      await waitProcessed(vigil, ingestion.accepted(), 300_000);
      rate = Math.round(rate * 0.85);
    }
    await waitProcessed(vigil, ingestion.accepted(), 300_000);
    const processed = await processedCount(vigil);
    report.notes.push(
      `end-to-end: ${ingestion.accepted()} payloads accepted, ${processed} processed at the end.`,
    );
  } finally {
    await ingestion.stop();
    await vigil.stop();
  }
}
