import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

/** The worker role's metrics (`vigil_worker_*`). */
export function createWorkerMetrics(registry: Registry) {
  const registers = [registry];
  return {
    steps: new Counter({
      name: 'vigil_worker_steps_total',
      help: 'Processing steps (queue entries taken together), by result.',
      labelNames: ['result'],
      registers,
    }),
    fencedSteps: new Counter({
      name: 'vigil_worker_fenced_steps_total',
      help: 'Processing steps refused because a partition lease changed hands while they ran (this worker stalled); their payloads are processed by the new owner.',
      registers,
    }),
    handedBack: new Counter({
      name: 'vigil_worker_partitions_handed_back_total',
      help: 'Partitions this worker handed back to balance the workers, each once no step of it was in flight.',
      registers,
    }),
    payloads: new Counter({ name: 'vigil_worker_payloads_total', help: 'Payloads processed.', registers }),
    values: new Counter({ name: 'vigil_worker_values_total', help: 'Data point values stored.', registers }),
    ticks: new Counter({
      name: 'vigil_worker_timer_ticks_total',
      help: 'Device timer ticks applied (deadlines of rules that wait, stale rules), queued by the scheduler.',
      registers,
    }),
    deadLetters: new Counter({
      name: 'vigil_worker_dead_letter_payloads_total',
      help: 'Payloads moved to the dead-letter stream with their queue entry (VIGIL_JOB_ATTEMPTS failures, or VIGIL_POISON_DELIVERIES crashes).',
      registers,
    }),
    payloadFailures: new Counter({
      name: 'vigil_worker_payload_failures_total',
      help: 'Payloads whose processing failed on their own data (PROCESSING_FAILED), moved to the dead-letter stream at once.',
      registers,
    }),
    partitions: new Gauge({
      name: 'vigil_worker_partitions',
      help: 'Ingest queue partitions this worker holds.',
      registers,
    }),
    duration: new Histogram({
      name: 'vigil_worker_step_seconds',
      help: 'Time per processing step.',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers,
    }),
  };
}

export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;

/** Fair parser CPU (parser-fairness.ts): who waits behind the others, and how much of theirs waited. */
export function createFairnessMetrics(registry: Registry) {
  const registers = [registry];
  return {
    slowed: new Gauge({
      name: 'vigil_worker_env_slowed',
      help: "1 while an environment's parsers use more than VIGIL_SANDBOX_CPU_SHARE of this worker's time: its payloads are processed after the other environments' in each step.",
      labelNames: ['env'],
      registers,
    }),
    slowedPayloads: new Counter({
      name: 'vigil_worker_slowed_payloads_total',
      help: "Payloads processed after the other environments' of their step because their environment was over its parser CPU share.",
      labelNames: ['env'],
      registers,
    }),
  };
}
