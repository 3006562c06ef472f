/**
 * Backlog tracking for BACKLOG_FULL: every `intervalMs` the gateway counts the unfinished jobs of
 * the ingest queue (one cheap Redis round trip) and multiplies by the average batch size this
 * process writes. The estimate is per process and at most one interval old; that is enough for a
 * high-water mark whose purpose is to stop unbounded growth of Redis memory, not to be exact.
 */
import type { Logger } from '../log/logger.ts';
import type { IngestMetrics } from './metrics.ts';

export interface BacklogMonitor {
  /** True while the last sample was above the high-water mark. */
  isFull(): boolean;
  /** Takes a sample now (tests, start-up). */
  sample(): Promise<void>;
  close(): void;
}

export function createBacklogMonitor(deps: {
  countUnfinishedJobs(): Promise<number>;
  averageBatchSize(): number;
  highWater: number;
  intervalMs: number;
  metrics: IngestMetrics;
  log: Logger;
}): BacklogMonitor {
  let full = false;
  let sampling: Promise<void> | undefined;
  const sample = () => {
    sampling ??= (async () => {
      try {
        const jobs = await deps.countUnfinishedJobs();
        const payloads = Math.round(jobs * deps.averageBatchSize());
        deps.metrics.queueDepthJobs.set(jobs);
        deps.metrics.backlogPayloads.set(payloads);
        if (payloads > deps.highWater !== full) {
          full = !full;
          deps.log.warn({ payloads, highWater: deps.highWater }, full ? 'backlog full' : 'backlog drained');
        }
      } catch {
        // Redis unreachable: submissions fail with UNAVAILABLE anyway; keep the last verdict.
      } finally {
        sampling = undefined;
      }
    })();
    return sampling;
  };
  const timer = setInterval(() => void sample(), deps.intervalMs);
  timer.unref();
  void sample();
  return { isFull: () => full, sample, close: () => clearInterval(timer) };
}
