/**
 * Alerting under ingestion, with the notifier role in the entry process (beside gateway, mqtt,
 * scheduler and api; the worker in its own process unless --single), delivering signed webhooks to
 * a receiver on loopback. One channel, one route: Temperature at WARNING or above, without returns
 * to SUCCESS. The bench's Temperature crosses WARNING once per 100 payloads of a device (and
 * returns once), so the route notifies about 1 % of payloads, from real threshold crossings; each
 * device's walk starts at its own point, so that notifications come evenly rather than a
 * thousand at once.
 *  - alerting: the end-to-end rate with the route ÷ without any (feature-costs.ts's alternation;
 *    the notifier runs in both), with flood control as shipped: past 20 notifications a minute the
 *    channel's events go into one digest. `--set notifyDigestThreshold=1000000000` measures the
 *    worst case, every matched event delivered as a webhook of its own.
 *  - notify-latency: from the event's creation (its receivedUTC, set by the worker's state step)
 *    to the receiver having the webhook, while ingesting at half the sustained end-to-end rate;
 *    flood control raised out of the way, so that every event is timed.
 */
import type { RouteInput } from '../../src/alerting/route-spec.ts';
import { notifierDefaultSettings, notifierSettings, openAlerting } from '../lib/alerting.ts';
import type { BenchContext, EndToEndVigil } from '../lib/context.ts';
import { sleep, startEndToEndVigil } from '../lib/context.ts';
import { percentile } from '../lib/stats.ts';
import { startReceiver, type Receiver } from '../lib/webhook-receiver.ts';
import { Ingestion, SPREAD_WARMUP_MAX_S, waitProcessed } from './end-to-end.ts';
import { runEndToEndAlternation, type WindowHooks } from './feature-costs.ts';
import { halfMaxRate } from './read-api.ts';

/** About 1 % of the bench's payloads: each device's upward crossing of Temperature's WARNING. */
const ROUTE: Omit<RouteInput, 'name' | 'channels'> = { sensor: 'Temperature', minStatus: 'WARNING' };
const ROUTE_TEXT = 'route --sensor Temperature --min-status WARNING';
const CHANNEL = 'bench-hook';

/** Creates the channel and route of `bv`'s environment to `receiver`. */
async function addRoute(ctx: BenchContext, bv: EndToEndVigil, receiver: Receiver) {
  const alerting = openAlerting(ctx, bv);
  try {
    await alerting.addWebhook(receiver, CHANNEL, ROUTE);
  } catch (err) {
    await alerting.close();
    throw err;
  }
  return alerting;
}

function checkSignatures(receiver: Receiver): void {
  if (receiver.unverified > 0)
    throw new Error(`${receiver.unverified} sampled webhook signatures did not verify`);
}

export async function runAlerting(ctx: BenchContext): Promise<void> {
  const receiver = await startReceiver();
  try {
    const withRoute = async (bv: EndToEndVigil): Promise<WindowHooks> => {
      const alerting = await addRoute(ctx, bv, receiver);
      let before = receiver.received;
      return {
        start: () => (before = receiver.received),
        describe: (payloads) => {
          const n = receiver.received - before;
          return `${n} webhooks received meanwhile (${((100 * n) / Math.max(1, payloads)).toFixed(2)} % of the payloads processed)`;
        },
        close: () => alerting.close(),
      };
    };
    const common = { extraRoles: 'notifier', settings: notifierDefaultSettings(receiver.url), spread: true };
    await runEndToEndAlternation(ctx, {
      scenario: 'alerting',
      a: { key: 'without', label: 'no routes', config: common },
      b: {
        key: 'with',
        label: 'a route notifying ~1 % of payloads',
        config: { ...common, prepare: withRoute },
      },
      maxRatio: 1.05,
      note: `the notifier role in the entry process in both; with: one webhook channel to a receiver on loopback and a ${ROUTE_TEXT}; flood control ${ctx.opts.settings.notifyDigestThreshold ? `at ${ctx.opts.settings.notifyDigestThreshold} a window (--set)` : 'as shipped (past 20 a minute, a digest)'}`,
    });
    checkSignatures(receiver);
  } finally {
    await receiver.close();
  }
}

export async function runNotifyLatency(ctx: BenchContext): Promise<void> {
  const { opts, report } = ctx;
  const rate = halfMaxRate(ctx);
  const latencies: number[] = [];
  let collecting = false;
  let unparsed = 0;
  const receiver = await startReceiver((body, atMs) => {
    if (!collecting) return;
    try {
      const n = JSON.parse(body) as { type?: string; data?: { receivedUTC?: string } };
      const created = Date.parse(n.data?.receivedUTC ?? '');
      if (n.type === 'event' && Number.isFinite(created)) latencies.push(atMs - created);
      else unparsed++;
    } catch {
      unparsed++;
    }
  });
  const bv = await startEndToEndVigil(ctx, {
    label: 'notify-latency',
    extraRoles: 'notifier',
    settings: notifierSettings(receiver.url),
  }).catch(async (err: unknown) => {
    await receiver.close();
    throw err;
  });
  const ingestion = new Ingestion(bv, { spread: true });
  const windowS = opts.runs * opts.measureS;
  try {
    const alerting = await addRoute(ctx, bv, receiver);
    try {
      ctx.log(`notify-latency: ingestion at ${rate} payloads/s, ${windowS} s measured`);
      await ingestion.start(rate, opts.warmupS + SPREAD_WARMUP_MAX_S + windowS + 10, opts.devices);
      await ingestion.warmUp(bv.worker, opts);
      collecting = true;
      await sleep(windowS * 1000);
      collecting = false;
      await ingestion.stop();
    } finally {
      await alerting.close();
    }
    checkSignatures(receiver);
    if (latencies.length === 0) throw new Error('notify-latency: no event webhook arrived in the window');
    const caughtUp = await waitProcessed(bv.worker, ingestion.accepted(), 60_000);
    const note = `${latencies.length} event webhooks over ${windowS} s while ingesting ${rate}/s (${unparsed} other bodies); event created = its receivedUTC (the worker's state step), answered = the receiver has the body, same clock; ${caughtUp ? 'every accepted payload processed afterwards' : 'the worker had NOT caught up 60 s after'}`;
    report.add({
      id: 'notify-latency.p50',
      label: `event created → webhook received p50 (ingesting ${rate}/s)`,
      unit: 'ms',
      runs: [percentile(latencies, 50)],
    });
    report.add({
      id: 'notify-latency.p99',
      label: 'event created → webhook received p99',
      unit: 'ms',
      runs: [percentile(latencies, 99)],
      target: { max: 2000 },
      note,
    });
  } finally {
    await ingestion.stop();
    await bv.stop();
    await receiver.close();
  }
}
