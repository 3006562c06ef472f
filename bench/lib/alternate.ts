/**
 * What a feature costs, measured by alternating two configurations in one run: A, B, A, B, … with
 * at least three windows of each, so that whatever else the machine does in those minutes weighs
 * on both alike (with `bothOrders`, A B then B A in turn, so that neither always runs first). The
 * figure is the median of the pairs' ratios B ÷ A; each configuration's own figures are reported
 * beside it.
 */
import type { BenchContext } from './context.ts';
import { RATIO_UNIT } from './report.ts';

/** Windows of each configuration, whatever `--runs` says (the issues ask for at least three). */
export const MIN_PAIRS = 3;
/** Pairs run again at most this often in all, when a window says it measured nothing. */
const MAX_REDOS = 2;

export interface Configuration<C> {
  /** Id suffix of its figure (`<scenario>.<key>`). */
  key: string;
  /** What it is, in the figure's label and the notes. */
  label: string;
  config: C;
}

export interface WindowResult {
  value: number;
  /** What the notes say of the window (offered and accepted rates, CPU per payload, …). */
  note: string;
  /** Why the window measured nothing (it kept up with what it was offered): its pair runs again. */
  redo?: string;
  /**
   * CPU µs per unit of work of Vigil and its stores in the window: a second estimate of the
   * feature's cost, steadier than rates on a host whose other work comes and goes.
   */
  cpuPerUnitUs?: number;
}

export interface Alternation<C> {
  /** The scenario: figure ids start with it. */
  scenario: string;
  /** What is measured in each window, e.g. 'end-to-end processed'. */
  measure: string;
  unit: string;
  /** The reference configuration (first of each pair) and the one whose cost is measured. */
  a: Configuration<C>;
  b: Configuration<C>;
  /** Least median ratio B ÷ A accepted (a capacity). */
  minRatio?: number;
  /** Most median ratio B ÷ A accepted (a cost, e.g. CPU per payload). */
  maxRatio?: number;
  /**
   * Odd pairs run B first: the orders alternate, over an even number of pairs (at least MIN_PAIRS
   * windows of each configuration, and of each order as many).
   */
  bothOrders?: boolean;
  /** One window of a configuration. */
  window(c: Configuration<C>, pair: number): Promise<WindowResult>;
  /** Before a pair runs again (e.g. offering more). */
  beforeRedo?(): void;
  /** Said of the ratio in the report (how the windows were run), once they have. */
  note: () => string;
}

export async function alternate<C>(ctx: BenchContext, spec: Alternation<C>): Promise<void> {
  const least = Math.max(MIN_PAIRS, ctx.opts.runs);
  const pairs = spec.bothOrders ? 2 * Math.ceil(least / 2) : least;
  const values = new Map<Configuration<C>, number[]>([
    [spec.a, []],
    [spec.b, []],
  ]);
  const ratios: number[] = [];
  const costRatios: number[] = [];
  let redos = 0;
  for (let pair = 0; pair < pairs; pair++) {
    const results: [Configuration<C>, WindowResult][] = [];
    const order = spec.bothOrders && pair % 2 === 1 ? [spec.b, spec.a] : [spec.a, spec.b];
    for (const c of order) {
      ctx.log(`${spec.scenario}: pair ${pair + 1} of ${pairs}, ${c.label}`);
      results.push([c, await spec.window(c, pair)]);
    }
    const redo = results.find(([, w]) => w.redo)?.[1].redo;
    const again = redo !== undefined && redos < MAX_REDOS;
    for (const [c, w] of results) {
      ctx.report.notes.push(
        `${spec.scenario} pair ${pair + 1}, ${c.label}${again ? ' (run again)' : ''}: ${w.note}`,
      );
      if (!again) values.get(c)!.push(w.value);
    }
    if (again) {
      redos++;
      ctx.log(`${spec.scenario}: pair ${pair + 1} again (${redo})`);
      spec.beforeRedo?.();
      pair--;
      continue;
    }
    const a = values.get(spec.a)![pair]!;
    ratios.push(a > 0 ? values.get(spec.b)![pair]! / a : Number.NaN);
    const costOf = (c: Configuration<C>) => results.find(([r]) => r === c)?.[1].cpuPerUnitUs;
    const [costA, costB] = [costOf(spec.a), costOf(spec.b)];
    if (costA !== undefined && costB !== undefined && costB > 0) costRatios.push(costA / costB);
  }
  for (const c of [spec.a, spec.b])
    ctx.report.add({
      id: `${spec.scenario}.${c.key}`,
      label: `${spec.measure}, ${c.label}`,
      unit: spec.unit,
      runs: values.get(c)!,
    });
  ctx.report.add({
    id: `${spec.scenario}.ratio`,
    label: `${spec.measure}: ${spec.b.label} ÷ ${spec.a.label}`,
    unit: RATIO_UNIT,
    runs: ratios,
    target: {
      ...(spec.minRatio === undefined ? {} : { min: spec.minRatio }),
      ...(spec.maxRatio === undefined ? {} : { max: spec.maxRatio }),
    },
    note: `median of ${pairs} pairs, alternated (${spec.bothOrders ? `${spec.a.label} first in odd pairs, ${spec.b.label} first in even ones` : `${spec.a.label} first in each`}); ${spec.note()}`,
  });
  if (costRatios.length === ratios.length)
    ctx.report.add({
      id: `${spec.scenario}.cost-ratio`,
      label: `CPU per unit of Vigil and its stores: ${spec.a.label} ÷ ${spec.b.label}`,
      unit: RATIO_UNIT,
      runs: costRatios,
      note: `the capacity ratio the same pairs' CPU costs imply where CPU is what limits: ${spec.a.label}'s CPU µs per unit (every process but the load generator) ÷ ${spec.b.label}'s, pair by pair`,
    });
}
