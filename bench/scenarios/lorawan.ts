/**
 * What taking The Things Stack's webhooks as they are costs against the glue users wrote before
 * (bench/lib/lorawan.ts): A posts each uplink message to `/gateway/submit/<KEY>` with a
 * `"deviceName"` added, read by a `parsePayload` that JSON-parses it and base64-decodes its frame;
 * B posts the message itself to `/tts/<KEY>`, read by the TS013 codec. Same devices, bytes and
 * decoding, the bench definition's four data points.
 *
 * Each window is a fresh end-to-end Vigil (the entry roles in one process, the worker in a second
 * unless --single), offered `--lorawan-rate` uplinks/s over HTTP (autocannon, 50 connections),
 * a rate both keep up with: the figure is CPU µs per processed uplink of every Vigil process and
 * of redis-server and influxd (not the load generator), and the median of the pairs' ratios B ÷ A,
 * the pairs' orders alternating (A B, B A, …). Twice: over `--devices` devices, and over the fleet
 * shape's `--lorawan-fleet` devices (each sends about once per 13 s at 1,500/s, far less than once
 * per worker step), warmed up until every device has sent. Before them, the sandbox calls alone
 * (lorawan-sandbox.ts).
 */
import { Redis as IORedis } from 'ioredis';
import { createKeys } from '../../src/keys.ts';
import { alternate, type Configuration, type WindowResult } from '../lib/alternate.ts';
import type { BenchContext, EndToEndVigil } from '../lib/context.ts';
import { HTTP_CONNECTIONS, sleep, startEndToEndVigil } from '../lib/context.ts';
import { describePerUnit, serviceCpuPerUnit, snapshot } from '../lib/cpu.ts';
import { runHttpLoad } from '../lib/http-load.ts';
import { GLUE_PATH, lorawanUplink, TTS_PATH, type LorawanPath } from '../lib/lorawan.ts';
import { BENCH_ENV } from '../lib/provision.ts';
import { measureSandboxCalls } from './lorawan-sandbox.ts';

/** Target: the codec path costs at most this × the glue's CPU per uplink. */
const MAX_RATIO = 1.1;
/** Seconds the load runs on after the measured window, so that the window ends under load. */
const TAIL_S = 2;

interface Shape {
  /** Figure ids: `lorawan.<key>` for the default shape, `lorawan.fleet.<key>` for the fleet. */
  scenario: string;
  devices: number;
  warmupS: number;
}

/** What the window's processes have counted so far. */
async function countsOf(bv: EndToEndVigil, events: () => Promise<number>) {
  const [entry, worker, eventCount] = await Promise.all([bv.vigil.metrics(), bv.worker.metrics(), events()]);
  const get = (m: Map<string, number>, name: string) => m.get(name) ?? 0;
  return {
    accepted: get(entry, 'vigil_ingest_accepted_total'),
    processed: get(worker, 'vigil_worker_payloads_total'),
    values: get(worker, 'vigil_worker_values_total'),
    steps: get(worker, 'vigil_worker_steps_total'),
    sandboxS: get(worker, 'vigil_sandbox_cpu_seconds_total'),
    events: eventCount,
  };
}

/** One window of configuration `c`: a fresh Vigil, the fixed rate, CPU per processed uplink. */
async function lorawanWindow(
  ctx: BenchContext,
  shape: Shape,
  c: Configuration<LorawanPath>,
): Promise<WindowResult> {
  const { opts } = ctx;
  const rate = opts.lorawanRate;
  const { path, spec, parser, body } = c.config;
  const bv = await startEndToEndVigil(ctx, {
    label: `${shape.scenario}-${c.key}`,
    definition: { spec, parser },
    devices: shape.devices,
  });
  const redis = new IORedis(ctx.redisUrl);
  const eventsKey = createKeys(bv.settings.keyPrefix).envEvents(BENCH_ENV);
  const events = () => redis.zcard(eventsKey);
  let seq = 0;
  const loadS = shape.warmupS + opts.measureS + TAIL_S;
  const load = runHttpLoad({
    url: `http://127.0.0.1:${bv.vigil.ports.gateway}/${path}/${bv.provisioned.apiKey}`,
    connections: HTTP_CONNECTIONS,
    durationS: loadS,
    rate,
    body: () => {
      const n = seq++;
      const device = n % shape.devices;
      return body(device, lorawanUplink(device, Math.floor(n / shape.devices)));
    },
  });
  // Awaited below; a failure meanwhile is not an unhandled rejection.
  load.catch(() => undefined);
  try {
    await sleep(shape.warmupS * 1000);
    const before = await countsOf(bv, events);
    const cpuBefore = snapshot(bv.cpuPids);
    const t0 = Date.now();
    await sleep(opts.measureS * 1000);
    const cpuAfter = snapshot(bv.cpuPids);
    const after = await countsOf(bv, events);
    const seconds = (Date.now() - t0) / 1000;
    const result = await load;
    const d = (k: keyof typeof before) => after[k] - before[k];
    const processed = d('processed');
    const growth = d('accepted') - processed;
    const flat = growth <= rate;
    const perStep = d('steps') > 0 ? (processed / d('steps')).toFixed(0) : '?';
    return {
      value: serviceCpuPerUnit(cpuBefore, cpuAfter, processed),
      note: `offered ${rate}/s (the load got ${Math.round(result.okPerSecond)}/s of 2xx over its ${loadS} s, ${result.non2xx} non-2xx, ${result.errors} errors), accepted ${Math.round(d('accepted') / seconds)}/s, processed ${Math.round(processed / seconds)}/s; backlog ${flat ? 'stayed flat, changed' : 'GREW'} by ${growth}; ${(d('values') / processed).toFixed(2)} history value lines per uplink and ${d('events')} events in the window (${((100 * d('events')) / processed).toFixed(1)} % of uplinks); ${perStep} uplinks per worker step; parser isolate ${((d('sandboxS') * 1e6) / processed).toFixed(1)} µs per uplink; ${describePerUnit(cpuBefore, cpuAfter, processed, 'uplink')}`,
    };
  } finally {
    await load.catch(() => undefined);
    redis.disconnect();
    await bv.stop();
  }
}

async function runShape(ctx: BenchContext, shape: Shape): Promise<void> {
  const { opts } = ctx;
  const notes = ctx.report.notes.length;
  await alternate(ctx, {
    scenario: shape.scenario,
    measure: 'CPU per uplink of Vigil and its stores',
    unit: 'µs/uplink',
    a: { key: 'glue', label: '/gateway/submit with a parsePayload glue', config: GLUE_PATH },
    b: { key: 'tts', label: '/tts/ with the TS013 codec', config: TTS_PATH },
    maxRatio: MAX_RATIO,
    bothOrders: true,
    window: (c) => lorawanWindow(ctx, shape, c),
    note: () => {
      const windows = ctx.report.notes.slice(notes).filter((n) => n.startsWith(`${shape.scenario} pair`));
      const grew = windows.filter((n) => n.includes('GREW')).length;
      return `each window a fresh Vigil (${opts.split ? 'worker in its own process' : 'all roles in one process'}) with ${shape.devices.toLocaleString('en-US')} devices, offered ${opts.lorawanRate}/s over HTTP (${HTTP_CONNECTIONS} connections) for ${opts.measureS} s measured after ${shape.warmupS} s of warm-up; CPU of every Vigil process, redis-server and influxd (not the load generator) ÷ uplinks processed; ${grew === 0 ? `the backlog stayed flat in all ${windows.length} windows` : `the backlog GREW in ${grew} of ${windows.length} windows: a configuration did not keep up`}`;
    },
  });
}

export async function runLorawan(ctx: BenchContext): Promise<void> {
  const { opts } = ctx;
  ctx.log('lorawan: sandbox calls, codec against parsePayload');
  measureSandboxCalls(ctx);
  await runShape(ctx, { scenario: 'lorawan', devices: opts.devices, warmupS: opts.warmupS });
  // Every device has sent before the window, so that the worker's caches hold the fleet, as they
  // do in a fleet that has been running.
  const round = Math.ceil(opts.lorawanFleet / opts.lorawanRate) + 2;
  await runShape(ctx, {
    scenario: 'lorawan.fleet',
    devices: opts.lorawanFleet,
    warmupS: Math.max(opts.warmupS, round),
  });
}
