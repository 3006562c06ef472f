/**
 * What a feature costs end to end, by alternating a configuration without it and one with it
 * (lib/alternate.ts), both orders in turn. Each window is a fresh end-to-end Vigil (the entry roles
 * in one process, the worker in a second unless --single) offered one fixed rate that both
 * configurations keep up with — a share of the sustained end-to-end rate — and the figure is the
 * median of the pairs' ratios of CPU per payload of Vigil and its stores, B ÷ A. Judged at
 * saturation instead, a host whose load generator cannot offer enough leaves both unsaturated and
 * the ratio is noise; at a fixed rate, CPU per payload is what the feature costs.
 *  - recent-payloads: VIGIL_DEVICE_RECENT_PAYLOADS at its default (20) against 0 (none kept).
 *  - late-writes: the worker recording late values (history versions, late hours) against not,
 *    with no value late (the bench's values are measured when accepted); the host's --no-late-writes.
 *  - conditions: every rule of the bench definition waiting (`for`) and every data point
 *    stale-watched against the same rules without (`--conditions`' definition and the usual one).
 * The alerting scenario (alerting.ts) runs the same way with and without routes.
 */
import { SETTINGS } from '../../src/config/schema.ts';
import { alternate, MIN_PAIRS, type Configuration, type WindowResult } from '../lib/alternate.ts';
import type { BenchContext, EndToEndVigil } from '../lib/context.ts';
import { startEndToEndVigil } from '../lib/context.ts';
import { describePerUnit, serviceCpuPerUnit, snapshot } from '../lib/cpu.ts';
import { lockstep } from '../lib/lockstep.ts';
import type { HostOptions, Settings } from '../lib/vigil-process.ts';
import { Ingestion, measureWindow, SPREAD_WARMUP_MAX_S } from './end-to-end.ts';

/** Offered rate ÷ the sustained one: a rate both configurations keep up with. */
const SHARE = 0.6;
/** When a configuration did not keep up with what was offered, its pair runs again offered this much. */
const LOWER = 0.8;
/**
 * A window whose backlog grew by more than this share of what it processed did not keep up: its
 * CPU per payload is of a saturated host, not of the offered rate.
 */
const KEPT_UP = 0.05;

/** What one configuration of an end-to-end alternation is. */
export interface EndToEndConfig {
  settings?: Settings;
  host?: HostOptions;
  /** Roles the entry process runs besides gateway, mqtt, scheduler and api. */
  extraRoles?: string;
  /** The bench definition's rules wait and its data points are stale-watched (`--conditions`). */
  conditions?: boolean;
  /** Threshold crossings spread evenly over time instead of in bursts (Ingestion's `spread`). */
  spread?: boolean;
  /** Sets the environment up before the load starts (alerting routes); the window's hooks. */
  prepare?: (bv: EndToEndVigil) => Promise<WindowHooks>;
}

export interface WindowHooks {
  /** The measured window starts. */
  start(): void;
  /** What the note says of the window, which processed `payloads`. */
  describe(payloads: number): string;
  close(): Promise<void>;
}

interface Measured extends WindowResult {
  keptUp: boolean;
  processedPerSecond: number;
}

/**
 * One window: a fresh Vigil of `c`, `offered` payloads/s (undefined: full speed); the value is the
 * CPU µs per payload of Vigil and its stores.
 */
async function capacityWindow(
  ctx: BenchContext,
  scenario: string,
  c: Configuration<EndToEndConfig>,
  offered: number | undefined,
): Promise<Measured> {
  const { opts } = ctx;
  const { prepare, spread, ...start } = c.config;
  // Side by side (--lockstep), both runs start their windows together and measure the same seconds.
  await lockstep();
  const bv = await startEndToEndVigil(ctx, { label: `${scenario}-${c.key}`, ...start });
  const ingestion = new Ingestion(bv, { spread: spread ?? false });
  let hooks: WindowHooks | undefined;
  try {
    hooks = await prepare?.(bv);
    await ingestion.start(offered, opts.warmupS + SPREAD_WARMUP_MAX_S + opts.measureS + 10, opts.devices);
    const warmupS = await ingestion.warmUp(bv.worker, opts);
    await lockstep();
    hooks?.start();
    const cpuBefore = snapshot(bv.cpuPids);
    const w = await measureWindow(bv.worker, ingestion, opts.measureS);
    const payloads = w.processedPerSecond * opts.measureS;
    const cpuAfter = snapshot(bv.cpuPids);
    const cpu = describePerUnit(cpuBefore, cpuAfter, payloads, 'payload');
    const keptUp = w.backlogGrowth <= KEPT_UP * payloads;
    return {
      value: serviceCpuPerUnit(cpuBefore, cpuAfter, payloads),
      processedPerSecond: w.processedPerSecond,
      keptUp,
      note: `processed ${Math.round(w.processedPerSecond)}/s, offered ${offered === undefined ? 'at full speed' : `${offered}/s`} (${warmupS} s of warm-up), accepted ${Math.round(w.acceptedPerSecond)}/s; backlog grew by ${Math.round(w.backlogGrowth)} (${keptUp ? 'kept up' : 'did NOT keep up'})${hooks ? `; ${hooks.describe(payloads)}` : ''}; ${cpu}`,
    };
  } finally {
    await ingestion.stop();
    await bv.stop();
    await hooks?.close();
  }
}

/**
 * The rate the windows are offered: SHARE × the sustained end-to-end rate of this run (or
 * `--e2e-rate` itself, for side-by-side runs that must offer the same); without either, SHARE ×
 * what configuration `a` processes at full speed in a first window (the previous run's figure may
 * be of another machine's minutes).
 */
async function offeredRate(ctx: BenchContext, scenario: string, a: Configuration<EndToEndConfig>) {
  if (ctx.opts.e2eRate !== undefined)
    return { offered: Math.round(ctx.opts.e2eRate), basis: '--e2e-rate' };
  const sustained = ctx.report.figures.get('e2e.sustained')?.value;
  if (sustained !== undefined && sustained > 0)
    return {
      offered: Math.round(sustained * SHARE),
      basis: `${SHARE} × the sustained end-to-end rate ${Math.round(sustained)}/s`,
    };
  ctx.log(`${scenario}: no sustained end-to-end rate in this run: a window at full speed (${a.label}) first`);
  const full = await capacityWindow(ctx, scenario, a, undefined);
  ctx.report.notes.push(`${scenario} calibration at full speed, ${a.label}: ${full.note}`);
  return {
    offered: Math.round(full.processedPerSecond * SHARE),
    basis: `${SHARE} × what ${a.label} processed at full speed (${Math.round(full.processedPerSecond)}/s)`,
  };
}

export async function runEndToEndAlternation(
  ctx: BenchContext,
  o: {
    scenario: string;
    a: Configuration<EndToEndConfig>;
    b: Configuration<EndToEndConfig>;
    /** Most median ratio of CPU per payload, B ÷ A, accepted. */
    maxRatio: number;
    /** How the configurations differ, for the ratio's note. */
    note: string;
  },
): Promise<void> {
  const start = await offeredRate(ctx, o.scenario, o.a);
  if (ctx.opts.config) {
    await oneConfiguration(ctx, o.scenario, ctx.opts.config === 'a' ? o.a : o.b, start);
    return;
  }
  let offered = start.offered;
  let behind = 0;
  await alternate(ctx, {
    scenario: o.scenario,
    measure: 'CPU per payload of Vigil and its stores',
    unit: 'µs/payload',
    a: o.a,
    b: o.b,
    maxRatio: o.maxRatio,
    bothOrders: true,
    window: async (c) => {
      const w = await capacityWindow(ctx, o.scenario, c, offered);
      if (w.keptUp) return w;
      behind++;
      return { ...w, redo: `${c.label}: it did not keep up with ${offered}/s` };
    },
    beforeRedo: () => {
      // Pairs before keep their rate: each pair's two windows are offered the same.
      offered = Math.round(offered * LOWER);
      behind = 0;
    },
    note: () =>
      `${o.note}; each window a fresh Vigil (${ctx.opts.split ? 'worker in its own process' : 'all roles in one process'}), offered ${offered === start.offered ? `${offered}/s (${start.basis})` : `${start.offered}/s (${start.basis}), lowered to ${offered}/s from the first pair run again because a configuration did not keep up`} for ${ctx.opts.measureS} s measured after at least ${ctx.opts.warmupS} s of warm-up; CPU of every Vigil process, redis-server and influxd (not the load generator) ÷ payloads processed; ${behind === 0 ? 'every window kept up' : `${behind} windows did NOT keep up (their CPU per payload is of a saturated host)`}`,
  });
}

export async function runRecentPayloads(ctx: BenchContext): Promise<void> {
  const kept = SETTINGS.deviceRecentPayloads.default;
  await runEndToEndAlternation(ctx, {
    scenario: 'recent-payloads',
    a: { key: 'off', label: 'no recent payloads kept', config: { settings: { deviceRecentPayloads: 0 } } },
    b: {
      key: 'on',
      label: `${kept} recent payloads kept per device`,
      config: { settings: { deviceRecentPayloads: kept } },
    },
    maxRatio: 1.05,
    note: 'VIGIL_DEVICE_RECENT_PAYLOADS 0 and its default',
  });
}

export async function runLateWrites(ctx: BenchContext): Promise<void> {
  await runEndToEndAlternation(ctx, {
    scenario: 'late-writes',
    a: { key: 'off', label: 'late values not recorded', config: { host: { lateWrites: false } } },
    b: { key: 'on', label: 'late values recorded', config: {} },
    maxRatio: 1.03,
    note: "the worker started with and without its late-value bookkeeping (StartOptions.lateWrites, the bench host's --no-late-writes); no value is late: every value is measured when the gateway accepts it",
  });
}

export async function runConditions(ctx: BenchContext): Promise<void> {
  await runEndToEndAlternation(ctx, {
    scenario: 'conditions',
    a: { key: 'off', label: 'rules that do not wait', config: { conditions: false } },
    b: {
      key: 'on',
      label: 'every rule waiting and every data point stale-watched',
      config: { conditions: true },
    },
    maxRatio: 1.05,
    note: 'the bench definition as usual, and as `--conditions` makes it (each rule `for: 1s`, each data point `stale: { after: 30m }`); the same code in both',
  });
}

/**
 * `--config a|b`: only that configuration, window after window at the same offered rate, for
 * bench/side-by-side.ts to set against the other configuration's windows run in the same seconds
 * by the other bench (`--lockstep`). No window runs again: both runs must take the same steps.
 */
async function oneConfiguration(
  ctx: BenchContext,
  scenario: string,
  c: Configuration<EndToEndConfig>,
  offered: { offered: number; basis: string },
): Promise<void> {
  const runs: number[] = [];
  const windows = Math.max(MIN_PAIRS, ctx.opts.runs);
  for (let i = 0; i < windows; i++) {
    ctx.log(`${scenario}: window ${i + 1} of ${windows}, ${c.label}`);
    const w = await capacityWindow(ctx, scenario, c, offered.offered);
    runs.push(w.value);
    ctx.report.notes.push(`${scenario} window ${i + 1}: ${c.label}: ${w.note}`);
  }
  ctx.report.add({
    id: `${scenario}.${c.key}`,
    label: `CPU per payload of Vigil and its stores, ${c.label}`,
    unit: 'µs/payload',
    runs,
    note: `this configuration alone (--config), each window a fresh Vigil offered ${offered.offered}/s (${offered.basis})`,
  });
}
