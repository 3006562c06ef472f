/**
 * Ceilings on this machine, measured in the same run as Vigil: what the building blocks do alone
 * with the same load shape (bare node:http, express, ioredis, InfluxDB, aedes).
 */
import { fork } from 'node:child_process';
import { Redis as IORedis } from 'ioredis';
import type { BenchContext } from '../lib/context.ts';
import { HTTP_CONNECTIONS, MQTT_CONNECTIONS, MQTT_WINDOW, sleep } from '../lib/context.ts';
import { runHttpLoad } from '../lib/http-load.ts';
import { startMqttLoad } from '../lib/mqtt-load.ts';
import { payloadBody } from '../lib/provision.ts';

const root = new URL('../../', import.meta.url).pathname;

/** A ceiling server (bench/ceiling-server.ts) of `kind` in its own process. */
export async function startCeilingServer(kind: string): Promise<{ port: number; stop(): Promise<void> }> {
  const child = fork(`${root}bench/ceiling-server.ts`, [kind], {
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port));
    child.once('exit', (code) => reject(new Error(`${kind} ceiling server exited with ${code}`)));
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return {
    port,
    async stop() {
      child.disconnect();
      const killer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(killer);
    },
  };
}

/** Body of the n-th HTTP request: 4 data points, devices in turn. */
export const httpBody = (n: number): string => payloadBody(n % 1000, Math.floor(n / 1000));

async function httpCeiling(
  ctx: BenchContext,
  kind: 'http' | 'express',
): Promise<{ rate: number[]; p99: number[] }> {
  const server = await startCeilingServer(kind);
  try {
    const url = `http://127.0.0.1:${server.port}/`;
    await runHttpLoad({ url, connections: HTTP_CONNECTIONS, durationS: ctx.opts.warmupS, body: httpBody });
    const rate: number[] = [];
    const p99: number[] = [];
    for (let r = 0; r < ctx.opts.runs; r++) {
      const res = await runHttpLoad({
        url,
        connections: HTTP_CONNECTIONS,
        durationS: ctx.opts.measureS,
        body: httpBody,
      });
      rate.push(res.okPerSecond);
      p99.push(res.p99Ms);
    }
    return { rate, p99 };
  } finally {
    await server.stop();
  }
}

async function redisCeiling(ctx: BenchContext, seconds: number): Promise<number> {
  const redis = new IORedis(ctx.redisUrl);
  const body = payloadBody(1, 1);
  const perPipeline = 1000;
  let done = 0;
  const until = Date.now() + seconds * 1000;
  // Two pipelines in flight, as the ingest producer has when several batches are being written.
  const lane = async () => {
    while (Date.now() < until) {
      const p = redis.pipeline();
      for (let i = 0; i < perPipeline; i++) p.rpush('ceiling:list', body);
      await p.exec();
      done += perPipeline;
    }
  };
  const started = Date.now();
  await Promise.all([lane(), lane()]);
  const rate = done / ((Date.now() - started) / 1000);
  await redis.del('ceiling:list');
  redis.disconnect();
  return rate;
}

let influxRun = 0;

async function influxCeiling(ctx: BenchContext, seconds: number): Promise<number> {
  // A fresh database each time: writing right after DROP DATABASE of the same name can fail with
  // 'shard not found'.
  const db = `ceiling${++influxRun}`;
  await fetch(`${ctx.influxUrl}/query?q=${encodeURIComponent(`CREATE DATABASE ${db}`)}`, { method: 'POST' });
  const sensors = ['Temperature', 'Humidity', 'CO2', 'Battery'];
  let seq = 0;
  const batch = (): string => {
    const lines: string[] = [];
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    for (let i = 0; i < 5000; i++, seq++) {
      const sensor = sensors[seq % 4]!;
      lines.push(
        `readings,env=bench,device=dev-${seq % 1000},sensor=${sensor},sensorType=t value=${seq % 97},severity=0i ${nowNs + BigInt(seq)}`,
      );
    }
    return lines.join('\n');
  };
  let points = 0;
  const until = Date.now() + seconds * 1000;
  // Two requests in flight (InfluxDB 1.x took ~115k points/s with one here, ~200k with two).
  const lane = async () => {
    while (Date.now() < until) {
      const res = await fetch(`${ctx.influxUrl}/write?db=${db}&precision=ns`, {
        method: 'POST',
        body: batch(),
      });
      if (res.status !== 204) throw new Error(`InfluxDB write answered ${res.status}: ${await res.text()}`);
      points += 5000;
    }
  };
  const started = Date.now();
  await Promise.all([lane(), lane()]);
  const rate = points / ((Date.now() - started) / 1000);
  await fetch(`${ctx.influxUrl}/query?q=${encodeURIComponent(`DROP DATABASE ${db}`)}`, { method: 'POST' });
  return rate;
}

async function aedesCeiling(ctx: BenchContext): Promise<number[]> {
  const server = await startCeilingServer('aedes');
  try {
    const measure = async (seconds: number) => {
      const load = await startMqttLoad({
        url: `mqtt://127.0.0.1:${server.port}`,
        topic: 'bench/ceiling',
        body: httpBody,
        connections: MQTT_CONNECTIONS,
        window: MQTT_WINDOW,
        maxSeconds: seconds,
      });
      const started = Date.now();
      await load.finished;
      const acked = load.acked();
      const elapsed = (Date.now() - started) / 1000;
      await load.stop();
      return acked / elapsed;
    };
    await measure(ctx.opts.warmupS);
    const runs: number[] = [];
    for (let r = 0; r < ctx.opts.runs; r++) runs.push(await measure(ctx.opts.measureS));
    return runs;
  } finally {
    await server.stop();
  }
}

export async function runCeilings(ctx: BenchContext): Promise<void> {
  const { report, opts } = ctx;
  ctx.log('ceiling: bare node:http JSON echo');
  const http = await httpCeiling(ctx, 'http');
  report.add({
    id: 'ceiling.http',
    label: 'ceiling: node:http JSON POST echo',
    unit: 'req/s',
    runs: http.rate,
  });
  ctx.log('ceiling: express hello-world JSON POST');
  const ex = await httpCeiling(ctx, 'express');
  report.add({
    id: 'ceiling.express',
    label: 'ceiling: express hello-world JSON POST',
    unit: 'req/s',
    runs: ex.rate,
  });
  report.add({ id: 'ceiling.express.p99', label: 'ceiling: express p99', unit: 'ms', runs: ex.p99 });
  ctx.log('ceiling: ioredis pipelined RPUSH');
  await redisCeiling(ctx, opts.warmupS);
  const redisRuns: number[] = [];
  for (let r = 0; r < opts.runs; r++) redisRuns.push(await redisCeiling(ctx, opts.measureS));
  report.add({
    id: 'ceiling.redis',
    label: 'ceiling: ioredis pipelined RPUSH',
    unit: 'ops/s',
    runs: redisRuns,
  });
  ctx.log('ceiling: InfluxDB line protocol, 5,000-point batches');
  await influxCeiling(ctx, opts.warmupS);
  const influxRuns: number[] = [];
  for (let r = 0; r < opts.runs; r++) influxRuns.push(await influxCeiling(ctx, opts.measureS));
  report.add({
    id: 'ceiling.influx',
    label: 'ceiling: InfluxDB line protocol (5k batches)',
    unit: 'points/s',
    runs: influxRuns,
  });
  ctx.log('ceiling: bare aedes QoS 1 publish → in-process subscriber');
  report.add({
    id: 'ceiling.aedes',
    label: 'ceiling: aedes QoS 1 → in-process subscriber',
    unit: 'msg/s',
    runs: await aedesCeiling(ctx),
  });
  await sleep(500);
}
