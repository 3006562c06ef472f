/**
 * End-to-end over MQTT with every feature on (sandbox parser, conversion, thresholds, events,
 * ingestion log, history): the entry roles in one Vigil process and the worker in a second one, as
 * a 2-core deployment would run them (`--single`: all roles in one process).
 *  1. Saturation: publish as fast as the windows allow for one window (what the worker gets done
 *     while the entry takes all the CPU it can).
 *  2. Search: short paced windows from the saturation window's processed rate (or 80 % of the
 *     drain rate, if more) down, until the backlog (accepted − processed) grows by less than 1 s
 *     worth of payloads.
 *  3. Sustained: that rate for `sustainS` seconds; the figure is the processed rate, and the note
 *     says whether the backlog stayed flat. Lag is sampled meanwhile (lag-probe.ts).
 *  4. Below it: three quarters of that rate, where the lag target applies ("below that rate").
 */
import { GATEWAY_PATHS } from '../../src/domain/ingest-item.ts';
import type { BenchContext } from '../lib/context.ts';
import { MQTT_CONNECTIONS, MQTT_WINDOW, sleep, startEndToEndVigil, type BenchVigil } from '../lib/context.ts';
import { startLagProbe, type LagProbe } from '../lib/lag-probe.ts';
import { startMqttLoad, type MqttLoad } from '../lib/mqtt-load.ts';
import { DATA_POINTS_PER_PAYLOAD, payloadBody, SPREAD_STEADY_PAYLOADS } from '../lib/provision.ts';
import type { BenchOptions } from '../lib/options.ts';
import { percentile } from '../lib/stats.ts';
import { describePerUnit, snapshot } from '../lib/cpu.ts';
import { commandStats, describeTopCommands } from '../lib/redis-stats.ts';
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

/** Longest warm-up of a spread load (Ingestion.warmUp); the load's time bound must cover it. */
export const SPREAD_WARMUP_MAX_S = 120;

/** An MQTT load against a bench Vigil whose payload sequence continues across loads. */
export class Ingestion {
  private seq = 0;
  private ackedBefore = 0;
  private load: MqttLoad | undefined;
  private readonly probes: LagProbe[] = [];
  private readonly bv: BenchVigil;
  private readonly spread: boolean;
  /**
   * `spread`: each device's Temperature walk starts at its own point, so that threshold crossings
   * (events) come evenly instead of every device's at once.
   */
  constructor(bv: BenchVigil, opts: { spread?: boolean } = {}) {
    this.bv = bv;
    this.spread = opts.spread ?? false;
  }

  /**
   * Starts publishing (`rate` undefined = full speed) for at most `maxSeconds` (and at most
   * `maxPayloads`).
   */
  async start(
    rate: number | undefined,
    maxSeconds: number,
    devices: number,
    maxPayloads?: number,
  ): Promise<void> {
    const base = this.seq;
    this.load = await startMqttLoad({
      ...mqttTarget(this.bv),
      body: (s) => {
        const n = base + s;
        this.seq = n + 1;
        const device = n % devices;
        return payloadBody(device, Math.floor(n / devices), this.spread ? device % 100 : 0);
      },
      connections: MQTT_CONNECTIONS,
      window: MQTT_WINDOW,
      ...(rate === undefined ? {} : { ratePerSecond: rate }),
      ...(maxPayloads === undefined ? {} : { maxPayloads }),
      maxSeconds,
    });
  }

  /** Resolves when the running load's time or count bound has ended it. */
  async finished(): Promise<void> {
    await this.load?.finished;
  }

  /**
   * The warm-up before a measured window of this load's first run on a fresh Vigil: the run's
   * warm-up, and with `spread` at least until `worker` has processed far enough into the devices'
   * walks that events come at their steady rate (a worker behind the offered rate gets there
   * later than the load; at most SPREAD_WARMUP_MAX_S). Returns the seconds it took.
   */
  async warmUp(worker: VigilProcess, opts: BenchOptions): Promise<number> {
    const started = Date.now();
    await sleep(opts.warmupS * 1000);
    if (this.spread) {
      const until = started + SPREAD_WARMUP_MAX_S * 1000;
      while ((await processedCount(worker)) < SPREAD_STEADY_PAYLOADS * opts.devices && Date.now() < until)
        await sleep(200);
    }
    return Math.round((Date.now() - started) / 1000);
  }

  /** PUBACKs over every load so far, the lag probes' included. */
  accepted(): number {
    const probes = this.probes.reduce((sum, p) => sum + p.acked(), 0);
    return this.ackedBefore + (this.load?.acked() ?? 0) + probes;
  }

  /** Counts `probe`'s payloads as accepted from now on (its count must start at zero here). */
  track(probe: LagProbe): LagProbe {
    this.probes.push(probe);
    return probe;
  }

  async stop(): Promise<void> {
    if (!this.load) return;
    const { acked } = await this.load.stop();
    this.ackedBefore += acked;
    this.load = undefined;
  }
}

/** Where the bench's MQTT payloads go. */
function mqttTarget(bv: BenchVigil): { url: string; topic: string; password: string } {
  return {
    url: `mqtt://127.0.0.1:${bv.vigil.ports.mqtt}`,
    topic: `${GATEWAY_PATHS.submit}/${bv.provisioned.apiKey}`,
    password: bv.provisioned.apiKey,
  };
}

/** The lag probe's connections: it publishes for devices of its own after the load's. */
function lagProbeTarget(ctx: BenchContext, bv: BenchVigil) {
  const { url, topic, password } = mqttTarget(bv);
  return {
    redisUrl: ctx.redisUrl,
    keyPrefix: bv.settings.keyPrefix,
    mqttUrl: url,
    topic,
    password,
    loadDevices: ctx.opts.devices,
  };
}

export interface Window {
  processedPerSecond: number;
  acceptedPerSecond: number;
  backlogGrowth: number;
}

/** Counts accepted and processed payloads over `seconds`. */
export async function measureWindow(
  vigil: VigilProcess,
  ingestion: Ingestion,
  seconds: number,
): Promise<Window> {
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

/** Publishes at full speed for one window: what is processed while the entry takes all it can. */
async function saturate(ctx: BenchContext, worker: VigilProcess, ingestion: Ingestion): Promise<Window> {
  const { opts } = ctx;
  ctx.log('end-to-end: saturation (publish at full speed)');
  await ingestion.start(undefined, opts.warmupS + opts.measureS + 5, opts.devices);
  await sleep(opts.warmupS * 1000);
  const w = await measureWindow(worker, ingestion, opts.measureS);
  await ingestion.stop();
  ctx.report.add({
    id: 'e2e.saturated',
    label: 'end-to-end processed, publishers at full speed',
    unit: 'payloads/s',
    runs: [w.processedPerSecond],
    note: `accepted ${Math.round(w.acceptedPerSecond)}/s meanwhile: the backlog grows and the entry takes CPU from the worker`,
  });
  ctx.log('end-to-end: waiting for the saturation backlog to drain');
  await waitProcessed(worker, ingestion.accepted(), 600_000);
  return w;
}

/**
 * Short paced windows, lowering the rate until the backlog stays flat (growth under 1 s worth).
 * The start is an upper estimate (what the worker processed at full speed, or 80 % of the drain
 * rate if that is more), so the search finds the rate from above; each next try is just under
 * what the previous one processed.
 */
export async function findSustainableRate(
  ctx: BenchContext,
  worker: VigilProcess,
  ingestion: Ingestion,
  start: number,
  devices = ctx.opts.devices,
) {
  const { opts } = ctx;
  const probeS = opts.quick ? 8 : 15;
  let rate = Math.max(100, Math.round(start));
  for (let attempt = 0; attempt < 6; attempt++) {
    ctx.log(`end-to-end: probing ${rate} payloads/s for ${probeS} s`);
    await ingestion.start(rate, probeS + 10, devices);
    await sleep(2000);
    const w = await measureWindow(worker, ingestion, probeS);
    await ingestion.stop();
    await waitProcessed(worker, ingestion.accepted(), 600_000);
    if (w.backlogGrowth <= rate) return rate;
    rate = Math.max(100, Math.round(Math.min(0.95 * rate, 0.97 * w.processedPerSecond)));
  }
  return rate;
}

export async function runEndToEnd(ctx: BenchContext): Promise<void> {
  const { opts, report } = ctx;
  // The worker in a second process (unless --single), so the entry and the worker do not share an
  // event loop: at 15,000 payloads/s their ~80 µs per payload would be more than one thread has.
  const bv = await startEndToEndVigil(ctx, { label: 'e2e' });
  const { worker } = bv;
  const ingestion = new Ingestion(bv);
  try {
    let rate = opts.e2eRate;
    if (rate === undefined) {
      const saturated = await saturate(ctx, worker, ingestion);
      const drain = report.figures.get('drain')?.value;
      const start = Math.max(saturated.processedPerSecond, drain !== undefined ? 0.8 * drain : 0);
      rate = await findSustainableRate(ctx, worker, ingestion, start);
    }

    const sustain = async (at: number) => {
      ctx.log(`end-to-end: sustained at ${at} payloads/s for ${opts.sustainS} s`);
      const probe = ingestion.track(startLagProbe(lagProbeTarget(ctx, bv)));
      await ingestion.start(at, opts.warmupS + opts.sustainS + 10, opts.devices);
      await sleep(opts.warmupS * 1000);
      probe.reset();
      const { cpuPids } = bv;
      const cpuBefore = snapshot(cpuPids);
      const redisBefore = await commandStats(ctx.redisUrl);
      const p0 = await processedCount(worker);
      const metricsBefore = await worker.metrics();
      const steps = metricsBefore.get('vigil_worker_steps_total') ?? 0;
      const w = await measureWindow(worker, ingestion, opts.sustainS);
      const done = (await processedCount(worker)) - p0;
      const cpu = `${describePerUnit(cpuBefore, snapshot(cpuPids), done, 'payload')}; ${describeTopCommands(
        redisBefore,
        await commandStats(ctx.redisUrl),
        done,
        'payload',
      )}`;
      const metricsAfter = await worker.metrics();
      const stepsAfter = metricsAfter.get('vigil_worker_steps_total') ?? 0;
      const perStep = stepsAfter > steps ? (done / (stepsAfter - steps)).toFixed(0) : '?';
      const lags = [...probe.samples()];
      const lagMissing = probe.missing();
      await probe.stop();
      await ingestion.stop();
      const writes = linesPerWrite(metricsBefore, metricsAfter);
      return { w, cpu, perStep, lags, lagMissing, writes };
    };
    let sustained = await sustain(rate);
    if (sustained.w.backlogGrowth > rate && opts.e2eRate === undefined) {
      // A 15 s probe can pass where 60 s do not: once more, just under what this window processed.
      await waitProcessed(worker, ingestion.accepted(), 600_000);
      rate = Math.round(Math.min(0.95 * rate, 0.97 * sustained.w.processedPerSecond));
      sustained = await sustain(rate);
    }
    const { w, cpu, perStep, lags, lagMissing, writes } = sustained;
    const grew = w.backlogGrowth > rate;
    const note = `offered ${rate}/s, accepted ${Math.round(w.acceptedPerSecond)}/s; backlog ${grew ? 'GREW' : 'stayed flat, changed'} by ${Math.round(w.backlogGrowth)} payloads over ${opts.sustainS} s; ${lags.length} lag samples (${lagMissing} probe payloads not in state within 10 s); ${perStep} payloads per worker step; ${writes} lines per InfluxDB write; ${cpu}`;
    report.add({
      id: 'e2e.sustained',
      label: `end-to-end sustained, every feature on${opts.split ? ' (worker in its own process)' : ''}`,
      unit: 'payloads/s',
      runs: [w.processedPerSecond],
      target: { min: 15_000 },
      note,
    });
    report.add({
      id: 'e2e.points',
      label: 'end-to-end data points sustained',
      unit: 'points/s',
      runs: [w.processedPerSecond * DATA_POINTS_PER_PAYLOAD],
      target: { min: 60_000 },
    });
    report.add({
      id: 'e2e.lag.p50',
      label: 'accept-to-state lag p50 at the sustained rate',
      unit: 'ms',
      runs: [percentile(lags, 50)],
    });
    report.add({
      id: 'e2e.lag.p99',
      label: 'accept-to-state lag p99 at the sustained rate',
      unit: 'ms',
      runs: [percentile(lags, 99)],
    });
    // The lag target is for rates below the sustained one: three quarters of it.
    await waitProcessed(worker, ingestion.accepted(), 600_000);
    // Of the rate processed: when the entry held the publishers back, less than was offered.
    const below = Math.round(Math.min(rate, w.processedPerSecond) * 0.75);
    const belowS = Math.max(20, Math.round(opts.sustainS / 3));
    ctx.log(`end-to-end: lag at ${below} payloads/s for ${belowS} s`);
    const probeBelow = ingestion.track(startLagProbe(lagProbeTarget(ctx, bv)));
    await ingestion.start(below, opts.warmupS + belowS + 10, opts.devices);
    await sleep(opts.warmupS * 1000);
    probeBelow.reset();
    await sleep(belowS * 1000);
    const lagsBelow = [...probeBelow.samples()];
    const lagMissingBelow = probeBelow.missing();
    await probeBelow.stop();
    await ingestion.stop();
    report.add({
      id: 'e2e.lagBelow.p50',
      label: `accept-to-state lag p50 at ${below}/s (¾ of the sustained rate)`,
      unit: 'ms',
      runs: [percentile(lagsBelow, 50)],
    });
    report.add({
      id: 'e2e.lagBelow.p99',
      label: `accept-to-state lag p99 at ${below}/s (¾ of the sustained rate)`,
      unit: 'ms',
      runs: [percentile(lagsBelow, 99)],
      target: { max: 1000 },
      note: `${lagsBelow.length} lag samples over ${belowS} s (${lagMissingBelow} probe payloads not in state within 10 s)`,
    });
    const caughtUp = await waitProcessed(worker, ingestion.accepted(), 600_000);
    const processed = await processedCount(worker);
    report.notes.push(
      `end-to-end: ${ingestion.accepted()} payloads accepted, ${processed} processed at the end${caughtUp ? '' : ' (worker had NOT caught up)'}.`,
    );
  } finally {
    await ingestion.stop();
    await bv.stop();
  }
}

/** Lines per InfluxDB write request between two samples of a worker's metrics. */
export function linesPerWrite(before: Map<string, number>, after: Map<string, number>): string {
  const delta = (name: string) => (after.get(name) ?? 0) - (before.get(name) ?? 0);
  const writes = delta('vigil_history_writes_total');
  return writes > 0 ? (delta('vigil_history_lines_total') / writes).toFixed(0) : '?';
}
