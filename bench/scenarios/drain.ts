/**
 * Backlog drain: a Vigil with the mqtt role alone fills the queue with `drainPayloads` payloads
 * (through the broker, as devices would); it stops; a Vigil with the worker role alone starts on
 * the same Redis prefix (`--drain-workers N`: N of them, sharing the queue's partitions) and the
 * figure is payloads / (time from their start until all are processed). The note also gives the
 * start-up time and the rate counted from ready.
 */
import type { BenchContext } from '../lib/context.ts';
import { MQTT_CONNECTIONS, MQTT_WINDOW, sleep, startBenchVigil } from '../lib/context.ts';
import { startMqttLoad } from '../lib/mqtt-load.ts';
import { payloadBody } from '../lib/provision.ts';
import { startVigilProcess } from '../lib/vigil-process.ts';
import { describePerUnit, snapshot } from '../lib/cpu.ts';
import { commandStats, describeTopCommands } from '../lib/redis-stats.ts';
import { GATEWAY_PATHS } from '../../src/domain/ingest-item.ts';
import { linesPerWrite, processedCount } from './end-to-end.ts';

async function drainOnce(ctx: BenchContext, run: number): Promise<{ rate: number; perJob: number }> {
  const { opts } = ctx;
  const filler = await startBenchVigil(ctx, 'mqtt');
  let filled: number;
  try {
    const load = await startMqttLoad({
      url: `mqtt://127.0.0.1:${filler.vigil.ports.mqtt}`,
      topic: `${GATEWAY_PATHS.submit}/${filler.provisioned.apiKey}`,
      password: filler.provisioned.apiKey,
      body: (n) => payloadBody(n % opts.devices, Math.floor(n / opts.devices)),
      connections: MQTT_CONNECTIONS,
      window: MQTT_WINDOW,
      maxSeconds: 300,
      maxPayloads: opts.drainPayloads,
    });
    await load.finished;
    filled = (await load.stop()).acked;
  } finally {
    await filler.vigil.stop();
  }
  const workers = opts.drainWorkers;
  ctx.log(`drain run ${run + 1}: ${filled} payloads queued; starting ${workers} worker process(es)`);
  const started = Date.now();
  const pids = { ...ctx.pids };
  const started$ = Array.from({ length: workers }, (_, i) =>
    startVigilProcess(
      { ...filler.settings, roles: 'worker' },
      { profile: opts.profile, label: `drain-worker${workers > 1 ? `-${i + 1}` : ''}` },
    ),
  );
  const settled = await Promise.allSettled(started$);
  const procs = settled.flatMap((r) => (r.status === 'fulfilled' ? [r.value] : []));
  const readyMs = Date.now() - started;
  const cpuPids = { ...Object.fromEntries(procs.map((w, i) => [`worker${i + 1}`, w.pid])), ...pids };
  const cpuBefore = snapshot(cpuPids);
  const redisBefore = await commandStats(ctx.redisUrl);
  const processed = async () =>
    (await Promise.all(procs.map((w) => processedCount(w)))).reduce((a, b) => a + b, 0);
  try {
    const failed = settled.find((r) => r.status === 'rejected');
    if (failed) throw failed.reason;
    const until = started + 600_000;
    let done = 0;
    while (Date.now() < until) {
      done = await processed();
      if (done >= filled) break;
      await sleep(100);
    }
    const seconds = (Date.now() - started) / 1000;
    if (done < filled) throw new Error(`drain: only ${done} of ${filled} processed within 600 s`);
    const cpu = describePerUnit(cpuBefore, snapshot(cpuPids), filled, 'payload');
    const redisTop = describeTopCommands(redisBefore, await commandStats(ctx.redisUrl), filled, 'payload');
    const metrics = await Promise.all(procs.map((w) => w.metrics()));
    const sum = (name: string) => metrics.reduce((a, m) => a + (m.get(name) ?? 0), 0);
    const lines = metrics.map((m) => linesPerWrite(new Map(), m)).join(' · ');
    const fromReady = filled / (seconds - readyMs / 1000);
    ctx.report.notes.push(
      `drain run ${run + 1}: worker start-up (spawn to ready) ${readyMs} ms, ${Math.round(fromReady)} payloads/s counted from ready; ${lines} lines per InfluxDB write; ${cpu}; ${redisTop}`,
    );
    const jobs = sum('vigil_worker_steps_total');
    return { rate: filled / seconds, perJob: jobs > 0 ? done / jobs : 0 };
  } finally {
    await Promise.all(procs.map((w) => w.stop()));
  }
}

export async function runDrain(ctx: BenchContext): Promise<void> {
  const runs: number[] = [];
  const perJob: number[] = [];
  for (let r = 0; r < ctx.opts.runs; r++) {
    const { rate, perJob: n } = await drainOnce(ctx, r);
    runs.push(rate);
    perJob.push(n);
  }
  ctx.report.add({
    id: 'drain',
    label: `backlog drain (${ctx.opts.drainWorkers > 1 ? `${ctx.opts.drainWorkers} worker processes` : 'worker'} started on a full queue)`,
    unit: 'payloads/s',
    runs,
    target: { min: 25_000 },
    note: `${ctx.opts.drainPayloads} payloads queued first; time counted from the worker process's start`,
  });
  ctx.report.add({
    id: 'drain.payloadsPerJob',
    label: 'drain: payloads per worker step',
    unit: 'payloads',
    runs: perJob,
  });
}
