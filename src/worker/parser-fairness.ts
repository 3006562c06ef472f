/**
 * Fair parser CPU between environments. The sandbox counts the CPU time each environment's parsers
 * used; this policy looks at it over a sliding window and names the environments whose parsers took
 * more than their share of the worker's time. A step processes those environments' payloads last:
 * every other environment's payloads of the step are parsed and their state stored first, so a
 * tenant with expensive parsers delays its own data, not its neighbours'. Nothing fails for it —
 * slowness is not a parser failure and never counts towards suspension.
 */

import type { Registry } from 'prom-client';
import type { Config } from '../config/schema.ts';
import type { Logger } from '../log/logger.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import { createFairnessMetrics } from './worker-metrics.ts';

/** The policy's settings and what it reads. */
export interface ParserFairnessOptions {
  /**
   * Fraction (0–1] of the worker process's time one environment's parsers may use over the window
   * before its payloads wait behind the others'. 1 turns the policy off.
   */
  share: number;
  /** Length of the sliding window, in ms. */
  windowMs: number;
  /** Cumulative parser CPU time per environment, in ms (the sandbox's count). */
  cpuTimeByEnv(): ReadonlyMap<string, number>;
  clock?: () => number;
  /** Told when an environment starts or stops waiting behind the others. */
  onChange?: (env: string, slowed: boolean, shareUsed: number) => void;
}

export interface ParserFairness {
  /**
   * Of the environments present in a step, those whose payloads go last. Empty when the step has
   * payloads of one environment only: there is nobody to be fair to.
   */
  slowedAmong(envs: ReadonlySet<string>): ReadonlySet<string>;
  /** Every environment currently over its share, with the share of the window it used (0–1). */
  overShare(): ReadonlyMap<string, number>;
}

interface Sample {
  atMs: number;
  cpuMs: ReadonlyMap<string, number>;
}

/** Samples are taken at most this often; a step between two samples uses the last verdict. */
const SAMPLES_PER_WINDOW = 10;
const NONE: ReadonlySet<string> = new Set();

export function createParserFairness(options: ParserFairnessOptions): ParserFairness {
  const clock = options.clock ?? Date.now;
  const sampleEveryMs = options.windowMs / SAMPLES_PER_WINDOW;
  const samples: Sample[] = [];
  let over = new Map<string, number>();

  /** Takes a sample when the last is old enough, and recomputes who is over their share. */
  function refresh(): void {
    const nowMs = clock();
    const last = samples.at(-1);
    if (last !== undefined && nowMs - last.atMs < sampleEveryMs) return;
    samples.push({ atMs: nowMs, cpuMs: new Map(options.cpuTimeByEnv()) });
    // Keep the newest sample at least a window old as the baseline.
    while (samples.length > 2 && nowMs - samples[1]!.atMs >= options.windowMs) samples.shift();
    const next = overShareBetween(samples[0]!, samples.at(-1)!, options.share);
    for (const [env, used] of next) if (!over.has(env)) options.onChange?.(env, true, used);
    for (const [env, used] of over) if (!next.has(env)) options.onChange?.(env, false, used);
    over = next;
  }

  return {
    slowedAmong(envs) {
      if (options.share >= 1) return NONE;
      // Sampled at every step, so that the window is never older than it says.
      refresh();
      if (over.size === 0 || envs.size < 2) return NONE;
      const slowed = new Set<string>();
      for (const env of envs) if (over.has(env)) slowed.add(env);
      // When every environment of the step is over its share, none goes first.
      return slowed.size === envs.size ? NONE : slowed;
    },
    overShare() {
      refresh();
      return over;
    },
  };
}

/** The environments whose CPU time between two samples exceeds `share` of the elapsed time. */
function overShareBetween(from: Sample, to: Sample, share: number): Map<string, number> {
  const over = new Map<string, number>();
  const elapsedMs = to.atMs - from.atMs;
  if (elapsedMs <= 0) return over;
  for (const [env, cpuMs] of to.cpuMs) {
    const used = (cpuMs - (from.cpuMs.get(env) ?? 0)) / elapsedMs;
    if (used > share) over.set(env, used);
  }
  return over;
}

/**
 * The processor's fairness dependencies for a worker process: the policy over the sandbox's CPU
 * counts, with its changes logged and its effect counted (`vigil_worker_env_slowed`,
 * `vigil_worker_slowed_payloads_total`).
 */
export function fairParsers(
  sandbox: { cpuTimeByEnv(): ReadonlyMap<string, number> },
  config: Pick<Config, 'sandboxCpuShare' | 'sandboxCpuWindowMs'>,
  registry: Registry,
  log: Logger,
): { fairness: ParserFairness; onSlowed: (items: readonly IngestItem[]) => void } {
  const metrics = createFairnessMetrics(registry);
  const fairness = createParserFairness({
    share: config.sandboxCpuShare,
    windowMs: config.sandboxCpuWindowMs,
    cpuTimeByEnv: () => sandbox.cpuTimeByEnv(),
    onChange: (env, slowed, used) => {
      metrics.slowed.set({ env }, slowed ? 1 : 0);
      const share = Math.round(used * 1000) / 1000;
      if (slowed)
        log.warn(
          { env, share, limit: config.sandboxCpuShare },
          "an environment's parsers use more than their share of the worker's time: its payloads now go after the other environments' in each step",
        );
      else
        log.info({ env, share }, "an environment's parsers are back within their share of the worker's time");
    },
  });
  return {
    fairness,
    onSlowed: (items) => {
      const byEnv = new Map<string, number>();
      for (const item of items) byEnv.set(item.env, (byEnv.get(item.env) ?? 0) + 1);
      for (const [env, n] of byEnv) metrics.slowedPayloads.inc({ env }, n);
    },
  };
}
