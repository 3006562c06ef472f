/**
 * What a feature costs the end-to-end rate, by alternating a configuration without it and one with
 * it (lib/alternate.ts). Each window is a fresh end-to-end Vigil (the entry roles in one process,
 * the worker in a second unless --single) offered a little more than the sustained end-to-end rate,
 * so that what the machine processes is the configuration's capacity; the figure is the median of
 * the pairs' ratios of processed rates.
 *  - recent-payloads: VIGIL_DEVICE_RECENT_PAYLOADS at its default (20) ÷ 0 (none kept).
 *  - late-writes: the worker recording late values (history versions, late hours) ÷ not, with no
 *    value late (the bench's values are measured when accepted); the host's --no-late-writes.
 *  - conditions: every rule of the bench definition waiting (`for`) and every data point
 *    stale-watched ÷ the same rules without (`--conditions`' definition against the usual one).
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

/** Offered rate ÷ the sustained one: enough that neither configuration keeps up. */
const OVERLOAD = 1.15;
/** When a configuration kept up with what was offered, its pair runs again offered this much more. */
const RAISE = 1.25;
/**
 * A window whose backlog grew by less than this share of what it processed was not saturated: the
 * configuration kept up with what was offered, and its rate says nothing of its capacity.
 */
const SATURATED = 0.05;

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
  saturated: boolean;
}

/** One window: a fresh Vigil of `c`, `offered` payloads/s (undefined: full speed), the processed rate. */
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
    const saturated = w.backlogGrowth > SATURATED * payloads;
    return {
      value: w.processedPerSecond,
      cpuPerUnitUs: serviceCpuPerUnit(cpuBefore, cpuAfter, payloads),
      saturated,
      note: `processed ${Math.round(w.processedPerSecond)}/s, offered ${offered === undefined ? 'at full speed' : `${offered}/s`} (${warmupS} s of warm-up), accepted ${Math.round(w.acceptedPerSecond)}/s; backlog grew by ${Math.round(w.backlogGrowth)} (${saturated ? 'saturated' : 'NOT saturated: it kept up'})${hooks ? `; ${hooks.describe(payloads)}` : ''}; ${cpu}`,
    };
  } finally {
    await ingestion.stop();
    await bv.stop();
    await hooks?.close();
  }
}

/**
 * The rate the windows are offered: OVERLOAD × the sustained end-to-end rate of this run (or of
 * `--e2e-rate`); without either, OVERLOAD × what configuration `a` processes at full speed in a
 * first window (the previous run's figure may be of another machine's minutes).
 */
async function offeredRate(ctx: BenchContext, scenario: string, a: Configuration<EndToEndConfig>) {
  const sustained = ctx.report.figures.get('e2e.sustained')?.value ?? ctx.opts.e2eRate;
  if (sustained !== undefined && sustained > 0)
    return {
      offered: Math.round(sustained * OVERLOAD),
      basis: `${OVERLOAD} × the sustained end-to-end rate ${Math.round(sustained)}/s`,
    };
  ctx.log(`${scenario}: no sustained end-to-end rate in this run: a window at full speed (${a.label}) first`);
  const full = await capacityWindow(ctx, scenario, a, undefined);
  ctx.report.notes.push(`${scenario} calibration at full speed, ${a.label}: ${full.note}`);
  return {
    offered: Math.round(full.value * OVERLOAD),
    basis: `${OVERLOAD} × what ${a.label} processed at full speed (${Math.round(full.value)}/s)`,
  };
}

export async function runEndToEndAlternation(
  ctx: BenchContext,
  o: {
    scenario: string;
    a: Configuration<EndToEndConfig>;
    b: Configuration<EndToEndConfig>;
    minRatio: number;
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
  let unsaturated = 0;
  await alternate(ctx, {
    scenario: o.scenario,
    measure: 'end-to-end processed',
    unit: 'payloads/s',
    a: o.a,
    b: o.b,
    minRatio: o.minRatio,
    window: async (c) => {
      const w = await capacityWindow(ctx, o.scenario, c, offered);
      if (w.saturated) return w;
      unsaturated++;
      return { ...w, redo: `${c.label}: it kept up with ${offered}/s` };
    },
    beforeRedo: () => {
      // Pairs before keep their rate: each pair's two windows are offered the same.
      offered = Math.round(offered * RAISE);
      unsaturated = 0;
    },
    note: () =>
      `${o.note}; each window a fresh Vigil (${ctx.opts.split ? 'worker in its own process' : 'all roles in one process'}), offered ${offered === start.offered ? `${offered}/s (${start.basis})` : `${start.offered}/s (${start.basis}), raised to ${offered}/s from the first pair run again because a configuration kept up`} for ${ctx.opts.measureS} s measured after at least ${ctx.opts.warmupS} s of warm-up; ${unsaturated === 0 ? 'every window kept saturated' : `${unsaturated} windows NOT saturated (they kept up with what was offered: the ratio understates the cost)`}`,
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
    minRatio: 0.95,
    note: 'VIGIL_DEVICE_RECENT_PAYLOADS 0 and its default',
  });
}

export async function runLateWrites(ctx: BenchContext): Promise<void> {
  await runEndToEndAlternation(ctx, {
    scenario: 'late-writes',
    a: { key: 'off', label: 'late values not recorded', config: { host: { lateWrites: false } } },
    b: { key: 'on', label: 'late values recorded', config: {} },
    minRatio: 0.97,
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
    minRatio: 0.95,
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
    label: `end-to-end processed, ${c.label}`,
    unit: 'payloads/s',
    runs,
    note: `this configuration alone (--config), each window a fresh Vigil offered ${offered.offered}/s (${offered.basis})`,
  });
}
