/**
 * Accept rates: the HTTP gateway (202s/s, p50/p99, 50 connections, 4-data-point bodies) and the
 * MQTT broker (PUBACKs/s, bounded in-flight window), each with its own Vigil process running that
 * role alone — workers off, so the figure is the entry's, as the ceilings are the servers'.
 */
import { GATEWAY_PATHS } from '../../src/queue/jobs.ts';
import type { BenchContext } from '../lib/context.ts';
import { HTTP_CONNECTIONS, MQTT_CONNECTIONS, MQTT_WINDOW, startBenchVigil } from '../lib/context.ts';
import { runHttpLoad } from '../lib/http-load.ts';
import { startMqttLoad } from '../lib/mqtt-load.ts';
import { httpBody } from './ceilings.ts';

export async function runGatewayAccept(ctx: BenchContext): Promise<void> {
  ctx.log('HTTP gateway accept rate (gateway role alone)');
  const { vigil, provisioned } = await startBenchVigil(ctx, 'gateway');
  try {
    const url = `http://127.0.0.1:${vigil.ports.gateway}/${GATEWAY_PATHS.submit}/${provisioned.apiKey}`;
    await runHttpLoad({ url, connections: HTTP_CONNECTIONS, durationS: ctx.opts.warmupS, body: httpBody });
    const rate: number[] = [];
    const p50: number[] = [];
    const p99: number[] = [];
    let refused = 0;
    for (let r = 0; r < ctx.opts.runs; r++) {
      const res = await runHttpLoad({
        url,
        connections: HTTP_CONNECTIONS,
        durationS: ctx.opts.measureS,
        body: httpBody,
      });
      rate.push(res.okPerSecond);
      p50.push(res.p50Ms);
      p99.push(res.p99Ms);
      refused += res.non2xx + res.errors;
    }
    const note = refused > 0 ? `${refused} answers were not 202` : undefined;
    ctx.report.add({
      id: 'gateway.accept',
      label: 'HTTP gateway accepted (202)',
      unit: 'req/s',
      runs: rate,
      ceiling: 'ceiling.express',
      target: { min: 0.8, ratioOf: 'ceiling.express' },
      ...(note ? { note } : {}),
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
    await vigil.stop();
  }
}

/** Publishes at full speed (bounded window) for `seconds`; PUBACKs per second. */
export async function measureMqttAccept(
  url: string,
  topic: string,
  seconds: number,
  offset = 0,
): Promise<number> {
  const load = await startMqttLoad({
    url,
    topic,
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
    const url = `mqtt://127.0.0.1:${vigil.ports.mqtt}`;
    const topic = `${GATEWAY_PATHS.submit}/${provisioned.apiKey}`;
    await measureMqttAccept(url, topic, ctx.opts.warmupS);
    const runs: number[] = [];
    for (let r = 0; r < ctx.opts.runs; r++)
      runs.push(await measureMqttAccept(url, topic, ctx.opts.measureS, (r + 1) * 1e7));
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
