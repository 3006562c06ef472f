/**
 * Prometheus metrics of ingestion. Registered once per Registry: the HTTP gateway, the broker and
 * the bridge of one process share them (the second caller gets the existing instances).
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

export interface IngestMetrics {
  accepted: Counter<'via' | 'gateway'>;
  ignored: Counter<'via' | 'gateway'>;
  rejected: Counter<'via' | 'gateway' | 'code'>;
  batchSize: Histogram;
  queueDepthJobs: Gauge;
  backlogPayloads: Gauge;
}

const registered = new WeakMap<Registry, IngestMetrics>();

export function createIngestMetrics(registry: Registry): IngestMetrics {
  const existing = registered.get(registry);
  if (existing) return existing;
  const registers = [registry];
  const metrics: IngestMetrics = {
    accepted: new Counter({
      name: 'vigil_ingest_accepted_total',
      help: 'Payloads durably queued, by entry (http, mqtt, bridge) and gateway kind.',
      labelNames: ['via', 'gateway'],
      registers,
    }),
    ignored: new Counter({
      name: 'vigil_ingest_ignored_total',
      help: 'Network server messages taken and logged as ignored (not data: joins, downlink events…), by entry and gateway.',
      labelNames: ['via', 'gateway'],
      registers,
    }),
    rejected: new Counter({
      name: 'vigil_ingest_rejected_total',
      help: 'Payloads refused at the gateway, by entry, gateway kind and error code.',
      labelNames: ['via', 'gateway', 'code'],
      registers,
    }),
    batchSize: new Histogram({
      name: 'vigil_ingest_batch_size',
      help: 'Payloads per queued job (micro-batch).',
      buckets: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000],
      registers,
    }),
    queueDepthJobs: new Gauge({
      name: 'vigil_ingest_queue_depth_jobs',
      help: 'Ingest queue entries (micro-batches) waiting or being processed (sampled).',
      registers,
    }),
    backlogPayloads: new Gauge({
      name: 'vigil_ingest_backlog_payloads',
      help: 'Payloads not yet processed (the larger of the counted payloads and queue depth × average batch size), compared with VIGIL_BACKLOG_HIGH_WATER.',
      registers,
    }),
  };
  registered.set(registry, metrics);
  return metrics;
}
