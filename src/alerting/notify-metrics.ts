/**
 * Prometheus metrics of notification delivery: attempts by channel type and outcome, latency from
 * the event to the receiver's answer, and the queue's depth and kept failures (read from BullMQ
 * when scraped, with a time limit so that /metrics answers while Redis is away).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { NotificationQueue } from './notification-queue.ts';

export interface NotifyMetrics {
  deliveries: Counter<'channel_type' | 'outcome'>;
  latency: Histogram<'channel_type'>;
}

/** Longest a scrape waits for the queue's counts, in ms; the last counts are reported otherwise. */
const COUNTS_TIMEOUT_MS = 500;

export function createNotifyMetrics(registry: Registry, queue: NotificationQueue): NotifyMetrics {
  const registers = [registry];
  let last = { depth: 0, failed: 0 };
  const counts = async () => {
    let timer: NodeJS.Timeout | undefined;
    try {
      const c = await Promise.race([
        queue.getJobCounts('waiting', 'delayed', 'active', 'prioritized', 'failed'),
        new Promise<undefined>(
          (resolve) => (timer = setTimeout(() => resolve(undefined), COUNTS_TIMEOUT_MS)),
        ),
      ]);
      if (c) {
        const n = (k: string) => c[k] ?? 0;
        last = { depth: n('waiting') + n('delayed') + n('active') + n('prioritized'), failed: n('failed') };
      }
    } catch {
      // Redis unreachable: report the last counts.
    } finally {
      clearTimeout(timer);
    }
    return last;
  };
  new Gauge({
    name: 'vigil_notify_queue_depth',
    help: 'Notifications waiting, delayed (retries, digests) or being delivered.',
    registers,
    async collect() {
      this.set((await counts()).depth);
    },
  });
  new Gauge({
    name: 'vigil_notify_failed',
    help: 'Failed notifications kept (vigil notify failed).',
    registers,
    async collect() {
      this.set((await counts()).failed);
    },
  });
  return {
    deliveries: new Counter({
      name: 'vigil_notify_deliveries_total',
      help: 'Delivery attempts by channel type and outcome (delivered, retrying, failed, discarded).',
      labelNames: ['channel_type', 'outcome'],
      registers,
    }),
    latency: new Histogram({
      name: 'vigil_notify_latency_seconds',
      help: "Seconds from an event's creation to the receiver's answer accepting its notification.",
      labelNames: ['channel_type'],
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 3600, 86400],
      registers,
    }),
  };
}
