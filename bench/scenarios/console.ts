/**
 * The web console under ingestion at half the sustained end-to-end rate (the api role in the entry
 * process, the worker in its own unless --single), signed in as a console user made as
 * `vigil user create` makes one, with the session cookie the sign-in form sets:
 *  - fleet: autocannon, 10 connections, `GET /console/fleet` — the fleet page, rendered on the
 *    server with every device (the page's data comes with it; `fleet.json` is the same snapshot,
 *    which no page asks for) — asking for compression as a browser does.
 *  - live: device pages open as server-sent-event streams (`GET /console/live?view=device`, what
 *    the page's EventSource opens), one per probe device; the bench publishes a payload with a
 *    Battery value new to the device and times until a stream's update shows that value in the
 *    device's data points. Probes are spread over the window, one in flight per device.
 */
import { request, type IncomingMessage } from 'node:http';
import { connectAsync } from 'mqtt';
import { GATEWAY_PATHS } from '../../src/domain/ingest-item.ts';
import { formatValue } from '../../src/domain/data-types.ts';
import { paths } from '../../src/console/views/format.ts';
import { SETTINGS } from '../../src/config/schema.ts';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import type { BenchContext, EndToEndVigil } from '../lib/context.ts';
import { sleep, startEndToEndVigil } from '../lib/context.ts';
import { describePerUnit, snapshot } from '../lib/cpu.ts';
import { runHttpLoad } from '../lib/http-load.ts';
import { LAG_PROBE_DEVICES } from '../lib/lag-probe.ts';
import { BENCH_ENV, deviceName } from '../lib/provision.ts';
import { percentile } from '../lib/stats.ts';
import { Ingestion, waitProcessed } from './end-to-end.ts';
import { halfMaxRate } from './read-api.ts';

const CLIENTS = 10;
const USERNAME = 'bench-console';
const PASSWORD = 'bench-console-password';
/** What Chromium sends: the console compresses its pages. */
const ACCEPT_ENCODING = 'gzip, deflate, br, zstd';
/** Open device pages: as many as a session may hold live streams. */
const PROBE_DEVICES = 6;
/** Probes over the live window (all devices together). */
const PROBES = 200;
/** A probe whose value no update shows within this long counts as missed. */
const PROBE_TIMEOUT_MS = 10_000;
/** The bench's payloads carry Battery 3000; a probe's is 3000 + its number on its device. */
const PROBE_BATTERY = 3000;

/** Signs in through the console's form as a browser would; the session cookie (`name=value`). */
export async function signIn(base: string, username = USERNAME, password = PASSWORD): Promise<string> {
  const form = await fetch(`${base}${paths.signIn}`);
  const html = await form.text();
  const token = /name="_csrf" value="([^"]+)"/.exec(html)?.[1];
  const formCookie = form.headers.getSetCookie().map((c) => c.split(';', 1)[0]!);
  if (!token || formCookie.length === 0)
    throw new Error(`console sign-in form: HTTP ${form.status}, no token`);
  const res = await fetch(`${base}${paths.signIn}`, {
    method: 'POST',
    redirect: 'manual',
    headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: formCookie.join('; ') },
    body: new URLSearchParams({ env: BENCH_ENV, username, password, _csrf: token }),
  });
  await res.arrayBuffer();
  const session = res.headers
    .getSetCookie()
    .map((c) => c.split(';', 1)[0]!)
    .find((c) => c.startsWith('vigil_session=') && c.length > 'vigil_session='.length);
  if (res.status !== 303 || !session)
    throw new Error(`console sign-in: HTTP ${res.status}, no session cookie`);
  return session;
}

/** A device page's live stream: calls `onUpdate` with each update's parsed data. */
function openLiveStream(
  base: string,
  cookie: string,
  device: string,
  onUpdate: (update: { rows?: Record<string, { set?: Record<string, string> }> }) => void,
): Promise<{ close(): void }> {
  const url = `${base}${paths.live}?${new URLSearchParams({ view: 'device', device }).toString()}`;
  return new Promise((resolve, reject) => {
    const req = request(url, { headers: { cookie, accept: 'text/event-stream' } }, (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        res.resume();
        reject(new Error(`console live stream of ${device}: HTTP ${res.statusCode}`));
        return;
      }
      // Closing the stream (ours, or the server's on stop) is no failure of the run.
      res.on('error', () => undefined);
      res.setEncoding('utf8');
      let buffer = '';
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const message = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const lines = message.split('\n');
          if (!lines.includes('event: update')) continue;
          const data = lines
            .filter((l) => l.startsWith('data: '))
            .map((l) => l.slice(6))
            .join('\n');
          onUpdate(JSON.parse(data) as Parameters<typeof onUpdate>[0]);
        }
      });
      resolve({ close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

/** Autocannon on the fleet page: req/s and p99 per window, CPU per request (ingestion included). */
async function fleetLoad(ctx: BenchContext, bv: EndToEndVigil, base: string, cookie: string) {
  const { opts } = ctx;
  const load = (durationS: number) =>
    runHttpLoad({
      url: `${base}${paths.fleet}`,
      method: 'GET',
      connections: CLIENTS,
      durationS,
      headers: { cookie, 'accept-encoding': ACCEPT_ENCODING },
      rate: opts.fleetRate,
    });
  // One request first: the session must open the page (a redirect to sign-in would be fast).
  const first = await fetch(`${base}${paths.fleet}`, { headers: { cookie }, redirect: 'manual' });
  await first.arrayBuffer();
  if (first.status !== 200) throw new Error(`console fleet: HTTP ${first.status} with the session cookie`);
  await load(opts.warmupS);
  const rates: number[] = [];
  const p99: number[] = [];
  for (let r = 0; r < opts.runs; r++) {
    const before = snapshot(bv.cpuPids);
    const res = await load(opts.measureS);
    // Without an answer in the window there is no percentile (autocannon would say 0 ms).
    if (res.non2xx > 0 || res.okPerSecond === 0)
      throw new Error(
        `console fleet: ${res.non2xx} non-2xx answers, ${res.okPerSecond} 2xx/s, ${res.errors} errors and timeouts (10 s) in ${opts.measureS} s`,
      );
    rates.push(res.okPerSecond);
    p99.push(res.p99Ms);
    const cpu = describePerUnit(before, snapshot(bv.cpuPids), res.okPerSecond * opts.measureS, 'request');
    ctx.report.notes.push(
      `console fleet, run ${r + 1}: p50 ${res.p50Ms} ms, ${res.errors} errors and timeouts; ${cpu} (ingestion included)`,
    );
  }
  return { rates, p99 };
}

/**
 * Payload → visible on an open device page: `PROBES` probes over `windowS` seconds, one in flight
 * per probe device; the latencies in ms and how many no update showed in time.
 */
async function liveProbes(
  ctx: BenchContext,
  bv: EndToEndVigil,
  base: string,
  cookie: string,
  windowS: number,
) {
  // Devices outside the load (provisioned for the lag probe, which this scenario does not run), so
  // that no load payload changes their value in between.
  const devices = Array.from({ length: PROBE_DEVICES }, (_, i) => deviceName(ctx.opts.devices + i));
  /** Per device: the value text its pending probe waits for, and what to call when it shows. */
  const waiting = new Map<string, { text: string; seen: () => void }>();
  const streams = await Promise.all(
    devices.map((device) =>
      openLiveStream(base, cookie, device, (update) => {
        const row = update.rows?.['device-points']?.set?.Battery;
        const w = waiting.get(device);
        if (row !== undefined && w && row.includes(`>${w.text}<`)) w.seen();
      }),
    ),
  );
  const mqtt = await connectAsync(`mqtt://127.0.0.1:${bv.vigil.ports.mqtt}`, {
    clientId: `bench-console-${process.pid}`,
    username: 'bench',
    password: bv.provisioned.apiKey,
    reconnectPeriod: 1000,
  });
  const topic = `${GATEWAY_PATHS.submit}/${bv.provisioned.apiKey}`;
  const latencies: number[] = [];
  let missed = 0;
  const perDevice = Math.ceil(PROBES / PROBE_DEVICES);
  const liveMs = Number(ctx.opts.settings.consoleLiveMs ?? SETTINGS.consoleLiveMs.default);
  const intervalMs = (windowS * 1000) / perDevice;
  const started = Date.now();
  const deadline = started + windowS * 1000 + PROBE_TIMEOUT_MS;
  try {
    await Promise.all(
      devices.map(async (device, d) => {
        for (let k = 1; k <= perDevice && Date.now() < deadline - PROBE_TIMEOUT_MS; k++) {
          // A random part of a poll interval besides: a probe sent right after the previous one
          // showed would always wait one whole interval for the console's next look.
          const slot = started + (k - 1) * intervalMs + (d * intervalMs) / PROBE_DEVICES;
          await sleep(Math.max(0, slot - Date.now()) + Math.random() * liveMs);
          const battery = PROBE_BATTERY + k;
          let seen!: () => void;
          const shown = new Promise<boolean>((resolve) => {
            seen = () => resolve(true);
            setTimeout(() => resolve(false), PROBE_TIMEOUT_MS).unref();
          });
          waiting.set(device, { text: formatValue('millivolts', battery, 'en'), seen });
          const sentMs = Date.now();
          await mqtt.publishAsync(topic, `{"deviceName":"${device}","t":20,"h":40,"c":600,"b":${battery}}`, {
            qos: 1,
          });
          if (await shown) latencies.push(Date.now() - sentMs);
          else missed++;
          waiting.delete(device);
        }
      }),
    );
  } finally {
    for (const s of streams) s.close();
    await mqtt.endAsync(true);
  }
  return { latencies, missed, devices };
}

export async function runConsole(ctx: BenchContext): Promise<void> {
  const { opts, report } = ctx;
  const rate = halfMaxRate(ctx);
  const bv = await startEndToEndVigil(ctx, { label: 'console' });
  const ingestion = new Ingestion(bv);
  try {
    const redis = connectRedis(ctx.redisUrl, 'command', 'bench-console');
    try {
      await createTenancyAdmin(adminDeps(redis, createKeys(bv.settings.keyPrefix))).createUser(
        BENCH_ENV,
        USERNAME,
        PASSWORD,
      );
    } finally {
      await closeRedis(redis);
    }
    const base = `http://127.0.0.1:${bv.vigil.ports.api}`;
    const cookie = await signIn(base);
    const liveS = opts.sustainS;
    const total = opts.warmupS * 2 + opts.runs * opts.measureS + liveS + PROBE_TIMEOUT_MS / 1000 + 15;
    ctx.log(`console: ingestion at ${rate} payloads/s`);
    await ingestion.start(rate, total, opts.devices);
    await sleep(opts.warmupS * 1000);
    ctx.log('console: fleet page, 10 clients');
    const fleet = await fleetLoad(ctx, bv, base, cookie);
    ctx.log(`console: live device pages, ${PROBES} probes over ${liveS} s`);
    const live = await liveProbes(ctx, bv, base, cookie, liveS);
    await ingestion.stop();
    const caughtUp = await waitProcessed(bv.worker, ingestion.accepted(), 60_000);
    const devices = (opts.devices + LAG_PROBE_DEVICES).toLocaleString('en-US');
    report.add({
      id: 'console.fleet',
      label: `console fleet page, ${devices} devices, ${CLIENTS} clients (ingesting ${rate}/s)`,
      unit: 'req/s',
      runs: fleet.rates,
    });
    report.add({
      id: 'console.fleet.p99',
      label: 'console fleet page p99',
      unit: 'ms',
      runs: fleet.p99,
      target: { max: 100 },
      note: `GET ${paths.fleet} with the session cookie and Accept-Encoding: ${ACCEPT_ENCODING}; ${caughtUp ? 'every accepted payload processed afterwards' : 'the worker had NOT caught up 60 s after'}`,
    });
    if (live.latencies.length === 0) throw new Error(`console live: no probe showed (${live.missed} missed)`);
    report.add({
      id: 'console.live.p50',
      label: `payload → shown on an open device page p50 (ingesting ${rate}/s)`,
      unit: 'ms',
      runs: [percentile(live.latencies, 50)],
    });
    report.add({
      id: 'console.live.p99',
      label: 'payload → shown on an open device page p99',
      unit: 'ms',
      runs: [percentile(live.latencies, 99)],
      note: `${live.latencies.length} probes over ${liveS} s to ${live.devices.length} open device pages (${live.missed} not shown within ${PROBE_TIMEOUT_MS / 1000} s); from the probe's MQTT publish to the stream's update showing its Battery value; the console looks for changes every VIGIL_CONSOLE_LIVE_MS`,
    });
  } finally {
    await ingestion.stop();
    await bv.stop();
  }
}
