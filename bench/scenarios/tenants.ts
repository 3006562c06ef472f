/**
 * Many environments end to end, at a fixed rate: what keeping every environment's parsers apart
 * costs per payload. `--tenants` environments (100), each with its own API key, a private
 * definition whose parser is its own code (JSON in, the four data points of the bench definition
 * out) and devices of it; a tenth of them (10) also have devices of one public definition, so its
 * parser serves several environments. The entry roles run in one Vigil process and the worker in a
 * second (`--single`: one), as in the end-to-end scenario, beside the usual bench environment,
 * which gets no payloads.
 *
 * The load is offered at `--e2e-rate` payloads/s (else half the sustained end-to-end rate), spread
 * evenly over the environments, one MQTT connection each (a connection is confined to its key's
 * environment), over as many devices as make about one payload per device per worker step: the
 * shape of a real fleet, where a step's work is spread over many devices and parsers rather than
 * many payloads of a few. After the warm-up (every device has sent), `--runs` windows of
 * `--measure` s each give the CPU per processed payload of every process; side by side
 * (`bench/side-by-side.ts`), both runs start each window together (lockstep).
 */
import { connectAsync, type MqttClient } from 'mqtt';
import { GATEWAY_PATHS } from '../../src/domain/ingest-item.ts';
import { SETTINGS } from '../../src/config/schema.ts';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import type { BenchContext, EndToEndVigil } from '../lib/context.ts';
import { sleep, startEndToEndVigil } from '../lib/context.ts';
import { describePerUnit, serviceCpuPerUnit, snapshot } from '../lib/cpu.ts';
import { lockstep } from '../lib/lockstep.ts';
import { BENCH_PARSER, BENCH_SPEC, deviceName, payloadBody } from '../lib/provision.ts';
import { commandStats, describeTopCommands } from '../lib/redis-stats.ts';
import { halfMaxRate } from './read-api.ts';
import { processedCount, waitProcessed } from './end-to-end.ts';

/** Share of the environments that also have devices of the public definition. */
const PUBLIC_SHARE = 0.1;
const PUBLIC_SPEC = { ...BENCH_SPEC, name: 'SharedSensors' };
/** Unacknowledged publishes per environment's connection: far above what one sends per round trip. */
const TENANT_WINDOW = 50;
/** Fewest devices per environment, whatever the rate. */
const MIN_DEVICES = 4;
/** Slack per window for the other run's lockstep and the windows' own reads, in seconds. */
const WINDOW_SLACK_S = 60;
const MB = 2 ** 20;

interface Tenant {
  env: string;
  apiKey: string;
  devices: number;
}

/** The shape of the run: environments, devices per environment, the offered rate. */
interface Shape {
  tenants: number;
  sharing: number;
  devicesPerTenant: number;
  rate: number;
}

/**
 * Environment `env`'s parser: the bench's, under a comment naming it, so that each environment's
 * parser is code of its own, compiled apart, as two customers' parsers are.
 */
const parserOf = (env: string) => `// Room sensors of ${env}\n${BENCH_PARSER}`;

/** How many devices give each one about one payload per worker step at `rate`. */
function shapeOf(ctx: BenchContext, rate: number): Shape {
  const tenants = ctx.opts.tenants;
  const stepMs = Number(ctx.opts.settings.workerStepIntervalMs ?? SETTINGS.workerStepIntervalMs.default);
  const devicesPerTenant = Math.max(MIN_DEVICES, Math.ceil((rate * Math.max(stepMs, 100)) / 1000 / tenants));
  return { tenants, sharing: Math.max(1, Math.round(tenants * PUBLIC_SHARE)), devicesPerTenant, rate };
}

/** Provisions the environments under `bv`'s key prefix: definitions, devices, one API key each. */
async function provisionTenants(ctx: BenchContext, bv: EndToEndVigil, shape: Shape): Promise<Tenant[]> {
  const redis = connectRedis(ctx.redisUrl, 'command', 'bench-tenants');
  try {
    const admin = createTenancyAdmin(adminDeps(redis, createKeys(bv.settings.keyPrefix)));
    await admin.applyDefinition({ kind: 'public' }, PUBLIC_SPEC, `// Shared sensors\n${BENCH_PARSER}`);
    const tenants: Tenant[] = [];
    for (let i = 0; i < shape.tenants; i++) {
      const env = `tenant-${i}`;
      await admin.createEnvironment(env, 'en');
      await admin.applyDefinition({ kind: 'private', env }, BENCH_SPEC, parserOf(env));
      const firstPublic = i < shape.sharing ? Math.ceil(shape.devicesPerTenant / 2) : shape.devicesPerTenant;
      for (let d = 0; d < shape.devicesPerTenant; d++) {
        const isPublic = d >= firstPublic;
        await admin.createDevice(env, {
          name: deviceName(d),
          definitionName: isPublic ? PUBLIC_SPEC.name : BENCH_SPEC.name,
          definitionIsPublic: isPublic,
        });
      }
      const { key } = await admin.createApiKey(env, 'bench');
      tenants.push({ env, apiKey: key, devices: shape.devicesPerTenant });
    }
    return tenants;
  } finally {
    await closeRedis(redis);
  }
}

/**
 * One MQTT connection per environment, paced together: a token bucket of the whole rate hands the
 * payloads to the environments in turn, each to its next device, so the load stays even across
 * environments (one timer for all: a paced load per environment would run as many timers).
 * Bounded in time; each connection's unacknowledged publishes are bounded too.
 */
class TenantLoad {
  private clients: MqttClient[] = [];
  private inflight: number[] = [];
  private sent: number[] = [];
  private acked = 0;
  private next = 0;
  private timer: NodeJS.Timeout | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private stopping: Promise<void> | undefined;

  async start(bv: EndToEndVigil, tenants: readonly Tenant[], rate: number, maxSeconds: number) {
    const connecting = tenants.map((t) =>
      connectAsync(`mqtt://127.0.0.1:${bv.vigil.ports.mqtt}`, {
        clientId: `bench-${process.pid}-${t.env}`,
        clean: true,
        reconnectPeriod: 1000,
        username: 'bench',
        password: t.apiKey,
      }),
    );
    const connected = await Promise.allSettled(connecting);
    this.clients = connected.flatMap((c) => (c.status === 'fulfilled' ? [c.value] : []));
    const failed = connected.find((c) => c.status === 'rejected');
    if (failed) throw new Error(`tenants: an MQTT connection failed: ${String(failed.reason)}`);
    this.inflight = tenants.map(() => 0);
    this.sent = tenants.map(() => 0);
    let tokens = 0;
    let last = performance.now();
    this.timer = setInterval(() => {
      const now = performance.now();
      // At most 50 ms worth of burst, so that a stall is not followed by a flood.
      tokens = Math.min(tokens + ((now - last) / 1000) * rate, rate * 0.05 + 1);
      last = now;
      while (tokens >= 1 && this.publishNext(tenants)) tokens--;
    }, 5);
    this.deadline = setTimeout(() => void this.stop(), maxSeconds * 1000);
  }

  /** Publishes the next environment's next payload; false when its connection's window is full. */
  private publishNext(tenants: readonly Tenant[]): boolean {
    const i = this.next % tenants.length;
    const t = tenants[i]!;
    if (this.inflight[i]! >= TENANT_WINDOW) return false;
    this.next++;
    const seq = this.sent[i]!++;
    const device = seq % t.devices;
    // Each device's walk starts at its own point, so threshold crossings (events) come evenly.
    const body = payloadBody(device, Math.floor(seq / t.devices) + ((i * 7 + device * 13) % 100));
    this.inflight[i]!++;
    this.clients[i]!.publish(`${GATEWAY_PATHS.submit}/${t.apiKey}`, body, { qos: 1 }, (err) => {
      this.inflight[i]!--;
      if (!err) this.acked++;
    });
    return true;
  }

  /** PUBACKs over every environment's connection. */
  accepted(): number {
    return this.acked;
  }

  /** Stops publishing, waits (up to 10 s) for outstanding PUBACKs, closes the connections. */
  stop(): Promise<void> {
    return (this.stopping ??= (async () => {
      clearInterval(this.timer);
      clearTimeout(this.deadline);
      const until = Date.now() + 10_000;
      while (this.inflight.some((n) => n > 0) && Date.now() < until) await sleep(20);
      await Promise.all(this.clients.map((c) => c.endAsync(true)));
    })());
  }
}

/** Payloads the worker has finished, and its steps. */
async function workerCounts(bv: EndToEndVigil): Promise<{ payloads: number; steps: number }> {
  const metrics = await bv.worker.metrics();
  return {
    payloads: metrics.get('vigil_worker_payloads_total') ?? 0,
    steps: metrics.get('vigil_worker_steps_total') ?? 0,
  };
}

/** One measured window: processed and accepted rates, the backlog's change, the CPU per payload. */
async function measureTenantWindow(ctx: BenchContext, bv: EndToEndVigil, load: TenantLoad, n: number) {
  const { measureS } = ctx.opts;
  await lockstep();
  const cpuBefore = snapshot(bv.cpuPids);
  const redisBefore = await commandStats(ctx.redisUrl);
  const before = await workerCounts(bv);
  const a0 = load.accepted();
  const t0 = Date.now();
  await sleep(measureS * 1000);
  const after = await workerCounts(bv);
  const a1 = load.accepted();
  const cpuAfter = snapshot(bv.cpuPids);
  const redisAfter = await commandStats(ctx.redisUrl);
  const seconds = (Date.now() - t0) / 1000;
  const done = after.payloads - before.payloads;
  const steps = after.steps - before.steps;
  const backlogGrowth = a1 - after.payloads - (a0 - before.payloads);
  const keptUp = backlogGrowth < done / seconds;
  const rssMb = (await bv.worker.rssBytes()) / MB;
  const note = `tenants window ${n}: processed ${Math.round(done / seconds)}/s, accepted ${Math.round((a1 - a0) / seconds)}/s; backlog grew by ${backlogGrowth} (${keptUp ? 'kept up' : 'did NOT keep up'}), ${steps > 0 ? (done / steps).toFixed(0) : '?'} payloads per worker step; ${describePerUnit(cpuBefore, cpuAfter, done, 'payload')}; ${describeTopCommands(redisBefore, redisAfter, done, 'payload')}; worker RSS ${Math.round(rssMb)} MB`;
  return { processed: done / seconds, cpuUs: serviceCpuPerUnit(cpuBefore, cpuAfter, done), rssMb, note };
}

export async function runTenants(ctx: BenchContext): Promise<void> {
  const { opts, report } = ctx;
  const shape = shapeOf(ctx, opts.e2eRate ?? halfMaxRate(ctx));
  const devices = shape.tenants * shape.devicesPerTenant;
  // Side by side, both runs provision and start together: neither's set-up is charged to the other's load.
  await lockstep();
  const bv = await startEndToEndVigil(ctx, { label: 'tenants' });
  const load = new TenantLoad();
  try {
    const provisionStarted = Date.now();
    const tenants = await provisionTenants(ctx, bv, shape);
    const rssIdle = await bv.worker.rssBytes();
    ctx.log(
      `tenants: ${shape.tenants} environments (${shape.sharing} also with public-definition devices), ${devices} devices provisioned in ${((Date.now() - provisionStarted) / 1000).toFixed(1)} s; ${shape.rate} payloads/s`,
    );
    await lockstep();
    await load.start(
      bv,
      tenants,
      shape.rate,
      opts.warmupS + 120 + opts.runs * (opts.measureS + WINDOW_SLACK_S),
    );
    // The warm-up: the run's, and at least until every device has sent a few payloads (every
    // environment's parsers are compiled, its devices' state exists).
    const warmUntil = Date.now() + 120_000;
    await sleep(opts.warmupS * 1000);
    while ((await processedCount(bv.worker)) < 3 * devices && Date.now() < warmUntil) await sleep(200);
    const windows = [];
    for (let n = 1; n <= opts.runs; n++) {
      ctx.log(`tenants: window ${n} of ${opts.runs}`);
      const w = await measureTenantWindow(ctx, bv, load, n);
      report.notes.push(w.note);
      windows.push(w);
    }
    await load.stop();
    const caughtUp = await waitProcessed(bv.worker, load.accepted(), 60_000);
    reportTenants(ctx, shape, windows, { rssIdle, caughtUp, accepted: load.accepted() });
  } finally {
    await load.stop();
    await bv.stop();
  }
}

function reportTenants(
  ctx: BenchContext,
  shape: Shape,
  windows: readonly { processed: number; cpuUs: number; rssMb: number }[],
  end: { rssIdle: number; caughtUp: boolean; accepted: number },
): void {
  const { report } = ctx;
  const where = `${shape.tenants} environments (${shape.sharing} sharing a public definition), ${shape.devicesPerTenant} devices each, ${shape.rate}/s offered`;
  report.add({
    id: 'tenants.cpu',
    label: `end-to-end CPU per payload of Vigil and its stores, ${where}`,
    unit: 'µs',
    runs: windows.map((w) => w.cpuUs),
    note: 'every process but the bench; per process in the notes (tenants window N)',
  });
  report.add({
    id: 'tenants.processed',
    label: `end-to-end processed, ${where}`,
    unit: 'payloads/s',
    runs: windows.map((w) => w.processed),
  });
  // What the environments' parsers hold is in here with what the load makes the worker keep
  // (heap headroom, buffers): two builds' difference ÷ environments is what one environment costs.
  report.add({
    id: 'tenants.workerRss',
    label: `the worker's RSS after each window, ${where}`,
    unit: 'MB',
    runs: windows.map((w) => w.rssMb),
    note: `${Math.round(end.rssIdle / MB)} MB provisioned and idle, before the first payload`,
  });
  report.notes.push(
    `tenants: ${end.accepted} payloads accepted; ${end.caughtUp ? 'all processed at the end' : 'the worker had NOT caught up 60 s after the load stopped'}.`,
  );
}
