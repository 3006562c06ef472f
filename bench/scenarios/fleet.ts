/**
 * The shape real fleets have: many devices (`--fleet-devices`, default 100,000), each sending far
 * less often than a worker step lasts, so that a step holds about one payload per device — unlike
 * the 1,000-device shape, where a step holds several payloads of each device and the state step's
 * per-device work is shared by them. Twice: payloads of 4 data points (the bench definition) and
 * of 1 (its Temperature alone). Each shape on a fresh end-to-end Vigil:
 *  1. Provisioning, then one payload per device at full speed, processed before anything is
 *     measured: the worker's caches hold the fleet and InfluxDB has every series, as in a fleet that
 *     has been running (a first contact costs far more than the steady state, in influxd most).
 *  2. The sustained rate, searched as the end-to-end scenario does, from above.
 *  3. That rate for `--sustain` seconds: CPU µs per payload of each process (the entry, the worker,
 *     redis-server — utime + stime, so the AOF and network I/O count — and influxd), Redis time by
 *     command, and what it implies: payloads/s and devices at one payload a minute per Redis core.
 *  4. Redis memory per device (`used_memory` ÷ devices, and the part the devices' payloads added).
 */
import { Redis as IORedis } from 'ioredis';
import type { DefinitionSpec } from '../../src/domain/types.ts';
import type { BenchContext } from '../lib/context.ts';
import { sleep, startEndToEndVigil } from '../lib/context.ts';
import { cpuPerUnitUs, serviceCpuPerUnit, snapshot } from '../lib/cpu.ts';
import { BENCH_SPEC, type BenchDefinition } from '../lib/provision.ts';
import { commandStats, describeTopCommands, sampleScripts } from '../lib/redis-stats.ts';
import { findSustainableRate, Ingestion, measureWindow, processedCount, waitProcessed } from './end-to-end.ts';

/** The bench definition's first data point alone, and a parser that picks it. */
const ONE_POINT: BenchDefinition = {
  spec: { ...BENCH_SPEC, dataPoints: BENCH_SPEC.dataPoints.slice(0, 1) } satisfies DefinitionSpec,
  parser: `function parsePayload(payloadStr) {
  return { Temperature: JSON.parse(payloadStr).t };
}`,
};

/** Longest a warm-up round (one payload per device) may take, provisioning excluded. */
const WARMUP_MAX_S = 600;

async function usedMemory(redisUrl: string): Promise<number> {
  const redis = new IORedis(redisUrl);
  try {
    const info = await redis.info('memory');
    return Number(/^used_memory:(\d+)/m.exec(info)?.[1] ?? Number.NaN);
  } finally {
    redis.disconnect();
  }
}

async function runShape(ctx: BenchContext, points: 1 | 4): Promise<void> {
  const { opts, report } = ctx;
  const devices = opts.fleetDevices;
  const id = `fleet.p${points}`;
  const what = `${devices.toLocaleString('en-US')} devices, ${points} data point${points === 1 ? '' : 's'} per payload`;
  ctx.log(`fleet: ${what}: provisioning`);
  const bv = await startEndToEndVigil(ctx, {
    label: id,
    devices,
    ...(points === 1 ? { definition: ONE_POINT } : {}),
  });
  const { worker } = bv;
  const ingestion = new Ingestion(bv);
  try {
    const provisionedBytes = await usedMemory(ctx.redisUrl);
    ctx.log(`fleet: ${what}: one payload per device`);
    const warmStarted = Date.now();
    await ingestion.start(undefined, WARMUP_MAX_S, devices, devices);
    await ingestion.finished();
    await ingestion.stop();
    const warmed = await waitProcessed(worker, ingestion.accepted(), WARMUP_MAX_S * 1000);
    const warmS = (Date.now() - warmStarted) / 1000;
    if (!warmed) throw new Error(`the warm-up round was not processed within ${WARMUP_MAX_S} s`);
    const warmedBytes = await usedMemory(ctx.redisUrl);
    // The round's rate includes every device's first contact: the steady rate is higher.
    const start = Math.max(1.25 * (devices / warmS), report.figures.get('e2e.sustained')?.value ?? 0);
    const rate = opts.fleetOffer ?? (await findSustainableRate(ctx, worker, ingestion, start, devices));

    ctx.log(`fleet: ${what}: sustained at ${rate} payloads/s for ${opts.sustainS} s`);
    await ingestion.start(rate, opts.warmupS + opts.sustainS + 10, devices);
    await sleep(opts.warmupS * 1000);
    const cpuBefore = snapshot(bv.cpuPids);
    const redisBefore = await commandStats(ctx.redisUrl);
    const scripts = await sampleScripts(ctx.redisUrl);
    const p0 = await processedCount(worker);
    const steps0 = (await worker.metrics()).get('vigil_worker_steps_total') ?? 0;
    const w = await measureWindow(worker, ingestion, opts.sustainS);
    const done = (await processedCount(worker)) - p0;
    const cpuAfter = snapshot(bv.cpuPids);
    const redisAfter = await commandStats(ctx.redisUrl);
    const byScript = await scripts.stop(done, 'payload');
    const steps = ((await worker.metrics()).get('vigil_worker_steps_total') ?? 0) - steps0;
    await ingestion.stop();
    const grew = w.backlogGrowth > rate;
    const us = (name: string) => cpuPerUnitUs(cpuBefore, cpuAfter, done, [name]);
    const redisUs = us('redis');
    const perCore = 1e6 / redisUs;
    const sendsEveryS = devices / rate;
    report.add({
      id: `${id}.sustained`,
      label: `fleet shape, ${what}: end-to-end sustained`,
      unit: 'payloads/s',
      runs: [w.processedPerSecond],
      ceiling: 'ceiling.aedes',
      note: `offered ${rate}/s, accepted ${Math.round(w.acceptedPerSecond)}/s; backlog ${grew ? 'GREW' : 'stayed flat, changed'} by ${Math.round(w.backlogGrowth)} over ${opts.sustainS} s; each device sends once per ${sendsEveryS.toFixed(0)} s, ${steps > 0 ? (done / steps).toFixed(0) : '?'} payloads per worker step (so about one per device); the warm-up round (every device's first payload) took ${warmS.toFixed(0)} s; ${describeTopCommands(redisBefore, redisAfter, done, 'payload')}; ${byScript}`,
    });
    const cpuFigure = (key: string, label: string, value: number) =>
      report.add({
        id: `${id}.cpu.${key}`,
        label: `fleet shape, ${what}: CPU per payload, ${label}`,
        unit: 'µs/payload',
        runs: [value],
      });
    cpuFigure('entry', 'the entry process (broker, gateway, scheduler, API)', us('vigil'));
    if (opts.split) cpuFigure('worker', 'the worker process', us('worker'));
    cpuFigure('redis', 'redis-server (utime + stime)', redisUs);
    cpuFigure('influx', 'influxd', us('influx'));
    cpuFigure('total', 'Vigil and its stores (all but the load generator)', serviceCpuPerUnit(cpuBefore, cpuAfter, done));
    report.add({
      id: `${id}.redisCore`,
      label: `fleet shape, ${what}: devices one Redis core carries at one payload a minute`,
      unit: 'devices',
      runs: [perCore * 60],
      note: `1 s of redis-server CPU ÷ ${redisUs.toFixed(1)} µs per payload = ${Math.round(perCore).toLocaleString('en-US')} payloads/s per Redis core${opts.split ? `; at ${us('worker').toFixed(0)} µs per payload a worker core does ${Math.round(1e6 / us('worker')).toLocaleString('en-US')}/s: ${(us('worker') / redisUs).toFixed(1)} worker processes per Redis core` : ''}`,
    });
    report.add({
      id: `${id}.redisMemory`,
      label: `fleet shape, ${what}: Redis memory per device`,
      unit: 'bytes',
      runs: [warmedBytes / devices],
      note: `used_memory after one payload of each device ÷ devices; ${Math.round((warmedBytes - provisionedBytes) / devices)} bytes of it came with the payloads (state, deadlines, recent payloads), the rest is the device's catalog records; the capped streams (queue, ingestion log, outbox) and the indexes count too`,
    });
  } finally {
    await ingestion.stop();
    await bv.stop();
  }
}

export async function runFleet(ctx: BenchContext): Promise<void> {
  await runShape(ctx, 4);
  await runShape(ctx, 1);
}
