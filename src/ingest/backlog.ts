/**
 * Backlog tracking for BACKLOG_FULL, shared fairly between environments. Every `intervalMs` the
 * gateway samples, in one Redis round trip, the unfinished entries of the ingest queue and the
 * payloads of each environment in them (counted with the queue's own writes, ingest-queue.ts). An
 * environment is refused while
 * - its own payloads are above `envHighWater` (0 = no such cap), or
 * - the whole backlog is above `highWater` and it holds at least its share of the mark:
 *   `highWater` divided by the environments with a backlog.
 * So one environment flooding the queue while workers are behind is refused, and the others are
 * not: one under its share keeps being accepted until it reaches it. The whole backlog is the
 * larger of the counted payloads and the entries times the mean payloads per entry this process
 * writes (which also covers entries written before the counts existed).
 *
 * The verdict is per process and at most one interval old: enough for limits whose purpose is to
 * keep Redis memory bounded and one tenant from crowding out the others, not to be exact.
 */
import type { EnvCounts } from '../queue/ingest-queue.ts';
import { startPeriodic } from '../lib/periodic.ts';
import { sampledWarning, type Logger } from '../log/logger.ts';
import type { IngestMetrics } from './metrics.ts';

export interface BacklogMonitor {
  /** True while the last sample refuses `env` more payloads. */
  isFull(env: string): boolean;
  /** Takes a sample now (tests, start-up). */
  sample(): Promise<void>;
  close(): void;
}

export interface BacklogLimits {
  /** Payloads of the whole backlog above which environments over their share are refused. */
  highWater: number;
  /** Payloads of one environment above which it is refused; 0 = no such cap. */
  envHighWater: number;
}

/**
 * The environments refused by one sample, and `everyone` when the backlog is over the mark with
 * nothing counted per environment (entries of an earlier version only): then all are refused.
 */
export function refusedEnvironments(
  payloads: number,
  payloadsByEnv: EnvCounts,
  limits: BacklogLimits,
): { everyone: boolean; envs: Set<string> } {
  const full = payloads > limits.highWater;
  const share = limits.highWater / Math.max(1, payloadsByEnv.size);
  const envs = new Set<string>();
  for (const [env, n] of payloadsByEnv) {
    if ((limits.envHighWater > 0 && n > limits.envHighWater) || (full && n >= share)) envs.add(env);
  }
  return { everyone: full && payloadsByEnv.size === 0, envs };
}

export function createBacklogMonitor(
  deps: BacklogLimits & {
    sampleQueue(): Promise<{ entries: number; payloadsByEnv: EnvCounts }>;
    averageBatchSize(): number;
    intervalMs: number;
    metrics: IngestMetrics;
    log: Logger;
  },
): BacklogMonitor {
  let refused = { everyone: false, envs: new Set<string>() };
  let sampling: Promise<void> | undefined;
  /** Samples failed in a row: one alone (the first, taken while the connection opens) is not worth a warning. */
  let failedInARow = 0;
  const sampleFailed = sampledWarning(deps.log, 'backlog sample failed (Redis unreachable?); the last verdict stands');
  const sample = () => {
    sampling ??= (async () => {
      try {
        const { entries, payloadsByEnv } = await deps.sampleQueue();
        let counted = 0;
        for (const n of payloadsByEnv.values()) counted += n;
        const payloads = Math.max(counted, Math.round(entries * deps.averageBatchSize()));
        deps.metrics.queueDepthJobs.set(entries);
        deps.metrics.backlogPayloads.set(payloads);
        const next = refusedEnvironments(payloads, payloadsByEnv, deps);
        logChanges(refused, next, payloads, payloadsByEnv);
        refused = next;
        failedInARow = 0;
      } catch (err) {
        // Redis unreachable: submissions fail with UNAVAILABLE anyway; keep the last verdict.
        if (++failedInARow > 1) sampleFailed({ err });
      } finally {
        sampling = undefined;
      }
    })();
    return sampling;
  };

  const logChanges = (
    before: typeof refused,
    after: typeof refused,
    payloads: number,
    payloadsByEnv: EnvCounts,
  ) => {
    const limits = { highWater: deps.highWater, envHighWater: deps.envHighWater };
    if (after.everyone !== before.everyone) {
      deps.log.warn({ payloads, ...limits }, after.everyone ? 'backlog full' : 'backlog drained');
    }
    for (const env of after.envs) {
      if (!before.envs.has(env)) {
        deps.log.warn(
          { env, envPayloads: payloadsByEnv.get(env), payloads, ...limits },
          'backlog full for env',
        );
      }
    }
    for (const env of before.envs) {
      if (!after.envs.has(env)) deps.log.info({ env, payloads }, 'backlog drained for env');
    }
  };

  // At once, then an interval after each sample; sample() catches its own failures.
  const samples = startPeriodic({
    intervalMs: deps.intervalMs,
    firstRunAfterMs: 0,
    unref: true,
    run: sample,
    onError: (err) => sampleFailed({ err }),
  });
  return {
    isFull: (env) => refused.everyone || refused.envs.has(env),
    sample,
    /** Stops the sampling; a sample in progress only updates the verdict (and its metrics). */
    close: () => void samples.close(),
  };
}
