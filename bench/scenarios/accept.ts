/**
 * Accept rates: the HTTP gateway (202s/s, p50/p99, 50 connections, 4-data-point bodies) and the
 * MQTT broker (PUBACKs/s, bounded in-flight window), each with its own Vigil process running that
 * role alone — workers off, so the figure is the entry's, as the ceilings are the servers'.
 */
import { GATEWAY_PATHS } from '../../src/domain/ingest-item.ts';
import type { BenchContext } from '../lib/context.ts';
import { HTTP_CONNECTIONS, MQTT_CONNECTIONS, MQTT_WINDOW, startBenchVigil } from '../lib/context.ts';
import { runHttpLoad } from '../lib/http-load.ts';
import { startMqttLoad } from '../lib/mqtt-load.ts';
import { httpBody, startCeilingServer } from './ceilings.ts';

/**
 * The gateway's windows alternate with windows of the express ceiling, in its own process beside
 * it (express, gateway, express, …, express): host speed drifts by tens of percent within minutes
 * on these machines, so each gateway window is compared with the express windows on either side of
 * it, and the target's ratio is to those windows' median rather than to the ceilings scenario's.
 */
export async function runGatewayAccept(ctx: BenchContext): Promise<void> {
  ctx.log('HTTP gateway accept rate (gateway role alone), windows alternating with the express ceiling');
  const { vigil, provisioned } = await startBenchVigil(ctx, 'gateway');
  const express = await startCeilingServer('express');
  try {
    const gatewayUrl = `http://127.0.0.1:${vigil.ports.gateway}/${GATEWAY_PATHS.submit}/${provisioned.apiKey}`;
    const expressUrl = `http://127.0.0.1:${express.port}/`;
    const window = (url: string, durationS: number) =>
      runHttpLoad({ url, connections: HTTP_CONNECTIONS, durationS, body: httpBody });
    await window(expressUrl, ctx.opts.warmupS);
    await window(gatewayUrl, ctx.opts.warmupS);
    const expressRate = [(await window(expressUrl, ctx.opts.measureS)).okPerSecond];
    const rate: number[] = [];
    const p50: number[] = [];
    const p99: number[] = [];
    let refused = 0;
    for (let r = 0; r < ctx.opts.runs; r++) {
      const res = await window(gatewayUrl, ctx.opts.measureS);
      rate.push(res.okPerSecond);
      p50.push(res.p50Ms);
      p99.push(res.p99Ms);
      refused += res.non2xx + res.errors;
      expressRate.push((await window(expressUrl, ctx.opts.measureS)).okPerSecond);
    }
    const paired = rate.map((g, r) => (2 * g) / (expressRate[r]! + expressRate[r + 1]!));
    ctx.report.add({
      id: 'gateway.express',
      label: 'ceiling: express, windows alternating with the gateway',
      unit: 'req/s',
      runs: expressRate,
    });
    ctx.report.add({
      id: 'gateway.accept',
      label: 'HTTP gateway accepted (202)',
      unit: 'req/s',
      runs: rate,
      ceiling: 'gateway.express',
      target: { min: 0.8, ratioOf: 'gateway.express' },
      note:
        `each window ÷ the mean of the express windows on either side: ${paired.map((x) => x.toFixed(2)).join(' / ')}` +
        (refused > 0 ? `; ${refused} answers were not 202` : ''),
    });
    ctx.report.add({ id: 'gateway.p50', label: 'HTTP gateway p50', unit: 'ms', runs: p50 });
    ctx.report.add({
      id: 'gateway.p99',
      label: 'HTTP gateway p99',
      unit: 'ms',
      runs: p99,
      target: { max: 50 },
    });
  } finally {
    await Promise.all([vigil.stop(), express.stop()]);
  }
}

/** Publishes at full speed (bounded window) for `seconds`, connected with `password`; PUBACKs per second. */
export async function measureMqttAccept(
  target: { url: string; topic: string; password: string },
  seconds: number,
  offset = 0,
): Promise<number> {
  const load = await startMqttLoad({
    ...target,
    body: (seq) => httpBody(seq + offset),
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
}

export async function runMqttAccept(ctx: BenchContext): Promise<void> {
  ctx.log('MQTT QoS 1 accept rate (mqtt role alone)');
  const { vigil, provisioned } = await startBenchVigil(ctx, 'mqtt');
  try {
    const target = {
      url: `mqtt://127.0.0.1:${vigil.ports.mqtt}`,
      topic: `${GATEWAY_PATHS.submit}/${provisioned.apiKey}`,
      password: provisioned.apiKey,
    };
    await measureMqttAccept(target, ctx.opts.warmupS);
    const runs: number[] = [];
    for (let r = 0; r < ctx.opts.runs; r++)
      runs.push(await measureMqttAccept(target, ctx.opts.measureS, (r + 1) * 1e7));
    ctx.report.add({
      id: 'mqtt.accept',
      label: 'MQTT QoS 1 accepted (PUBACK)',
      unit: 'msg/s',
      runs,
      ceiling: 'ceiling.aedes',
      target: { min: 20_000 },
    });
  } finally {
    await vigil.stop();
  }
}
