/**
 * Notification delivery: a Vigil with the notifier role alone delivers webhooks to a receiver on
 * loopback across 100 channels (one route per channel, each matching one device), flood control
 * raised out of the way. `notifyCount` events go into the event outbox at once, as workers would
 * write them; the figure is webhooks / (time from the first event until the receiver has them all).
 * The receiver answers 204 at once and verifies the signature of a sample.
 * With `--notify-rate N` the events come N per second instead, and the figure is the notifier's
 * CPU per webhook at that pace (what a notification costs when ingestion makes a few a second).
 */
import type { EventRecord } from '../../src/domain/types.ts';
import { notifierSettings, openAlerting } from '../lib/alerting.ts';
import type { BenchContext } from '../lib/context.ts';
import { sleep, startBenchVigil } from '../lib/context.ts';
import { cpuPerUnitUs, describePerUnit, snapshot } from '../lib/cpu.ts';
import { BENCH_ENV, deviceName } from '../lib/provision.ts';
import { startReceiver } from '../lib/webhook-receiver.ts';

const CHANNELS = 100;
/** A paced run puts its events into the outbox this often. */
const PACE_TICK_MS = 20;

function event(i: number): EventRecord {
  const device = deviceName(i % CHANNELS);
  return {
    id: `bench-${i}`,
    env: BENCH_ENV,
    deviceName: device,
    displayName: device,
    sensorName: 't',
    sensorType: 'tempC',
    sensorValue: 26,
    eventStatus: 'WARNING',
    eventCategory: 'Sensors',
    eventMessage: 't - Above 25 °C - WARNING - 26.0 °C',
    receivedMs: Date.now(),
  };
}

async function notifyOnce(ctx: BenchContext, run: number): Promise<number> {
  const count = ctx.opts.notifyCount;
  const receiver = await startReceiver();
  const bv = await startBenchVigil(ctx, 'notifier', {
    ...notifierSettings(receiver.url),
    notifyConcurrency: 200,
    logLevel: 'error',
  });
  const alerting = openAlerting(ctx, bv);
  const { redis, keys } = alerting;
  try {
    for (let c = 0; c < CHANNELS; c++)
      await alerting.addWebhook(receiver, `c${c}`, { device: deviceName(c) });
    const cpuPids = { notifier: bv.vigil.pid, redis: ctx.pids.redis };
    const cpuBefore = snapshot(cpuPids);
    const started = Date.now();
    const rate = ctx.opts.notifyRate;
    const chunk = rate === undefined ? 1000 : Math.max(1, Math.round(rate / (1000 / PACE_TICK_MS)));
    for (let i = 0; i < count; i += chunk) {
      const m = redis.multi();
      for (let j = i; j < Math.min(i + chunk, count); j++)
        m.xadd(keys.eventOutbox(), '*', 'e', JSON.stringify(event(j)));
      await m.exec();
      // Paced: this chunk's place in time (no drift: each waits for its own due time).
      if (rate !== undefined) await sleep(Math.max(0, started + ((i + chunk) * 1000) / rate - Date.now()));
    }
    const deadline = started + 600_000;
    while (receiver.received < count && Date.now() < deadline) await sleep(50);
    const seconds = (Date.now() - started) / 1000;
    const cpuAfter = snapshot(cpuPids);
    const cpu = describePerUnit(cpuBefore, cpuAfter, count, 'webhook');
    if (receiver.received < count)
      throw new Error(`notify: only ${receiver.received} of ${count} webhooks within 600 s`);
    if (receiver.unverified > 0)
      throw new Error(`notify: ${receiver.unverified} sampled signatures did not verify`);
    ctx.report.notes.push(
      `notify run ${run + 1}: ${count} webhooks to ${CHANNELS} channels in ${seconds.toFixed(1)} s${rate === undefined ? '' : ` (events at ${rate}/s)`}; ${cpu}`,
    );
    return rate === undefined ? count / seconds : cpuPerUnitUs(cpuBefore, cpuAfter, count, ['notifier']);
  } finally {
    await alerting.close();
    await bv.vigil.stop();
    await receiver.close();
  }
}

export async function runNotify(ctx: BenchContext): Promise<void> {
  const runs: number[] = [];
  for (let r = 0; r < ctx.opts.runs; r++) runs.push(await notifyOnce(ctx, r));
  if (ctx.opts.notifyRate !== undefined) {
    ctx.report.add({
      id: 'notify.paced-cpu',
      label: `notifier CPU per webhook, events at ${ctx.opts.notifyRate}/s`,
      unit: 'µs',
      runs,
      note: `${ctx.opts.notifyCount} events put in the event outbox at ${ctx.opts.notifyRate}/s, one webhook each, over ${CHANNELS} channels`,
    });
    return;
  }
  ctx.report.add({
    id: 'notify',
    label: `webhook delivery (notifier, ${CHANNELS} channels, receiver on loopback)`,
    unit: 'webhooks/s',
    runs,
    target: { min: 1000 },
    note: `${ctx.opts.notifyCount} events put in the event outbox at once, one webhook each; flood control raised out of the way`,
  });
}
