/**
 * The benchmark's figures: each with its unit, the runs it is the median of, the ceiling it is
 * compared with and the target it must meet; printed as a table and written as JSON.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname } from 'node:path';
import { median, round } from './stats.ts';

export interface Target {
  /** The figure must be at least this (or, with `ratioOf`, this times that figure). */
  min?: number;
  /** The figure must be at most this. */
  max?: number;
  /** The minimum is a ratio of this figure (e.g. 0.8 × the express ceiling). */
  ratioOf?: string;
}

export interface Figure {
  id: string;
  label: string;
  unit: string;
  /** Median of `runs`. */
  value: number;
  runs: number[];
  /** Id of the ceiling this figure is compared with. */
  ceiling?: string;
  target?: Target;
  note?: string;
  /** When it was measured (a partial run keeps older figures in latest.json). */
  measuredUTC?: string;
}

export class Report {
  readonly figures = new Map<string, Figure>();
  readonly notes: string[] = [];
  /** Figures of the previous run, for ratios and targets of a partial run (`--only`). */
  private baseline = new Map<string, Figure>();

  /** Reads the previous run's figures from `path` (none when it does not exist). */
  loadBaseline(path: string): void {
    try {
      const old = JSON.parse(readFileSync(path, 'utf8')) as { figures?: Record<string, Figure> };
      this.baseline = new Map(Object.entries(old.figures ?? {}));
    } catch {
      this.baseline = new Map();
    }
  }

  /** A figure of this run, else of the previous one. */
  get(id: string): Figure | undefined {
    return this.figures.get(id) ?? this.baseline.get(id);
  }

  add(f: Omit<Figure, 'value' | 'runs'> & { runs: number[] }): Figure {
    const figure: Figure = { ...f, value: median(f.runs), measuredUTC: new Date().toISOString() };
    this.figures.set(f.id, figure);
    return figure;
  }

  ratio(f: Figure): number | undefined {
    const c = f.ceiling === undefined ? undefined : this.get(f.ceiling);
    return c && c.value > 0 ? f.value / c.value : undefined;
  }

  /** 'met', 'MISSED' or '' (no target, or what it is relative to was not measured). */
  verdict(f: Figure): string {
    const t = f.target;
    if (!t) return '';
    if (t.max !== undefined && f.value > t.max) return 'MISSED';
    if (t.min !== undefined) {
      const base = t.ratioOf === undefined ? 1 : this.get(t.ratioOf)?.value;
      if (base === undefined) return '';
      if (f.value < t.min * base) return 'MISSED';
    }
    return 'met';
  }

  targetText(f: Figure): string {
    const t = f.target;
    if (!t) return '';
    const parts: string[] = [];
    const show = formatOf(f);
    if (t.min !== undefined) parts.push(t.ratioOf ? `≥ ${t.min} × ${t.ratioOf}` : `≥ ${show(t.min)}`);
    if (t.max !== undefined) parts.push(`≤ ${show(t.max)}`);
    return parts.join(', ');
  }

  table(): string {
    const rows = [['figure', 'value', 'unit', 'runs', 'ratio to ceiling', 'target', '']];
    for (const f of this.figures.values()) {
      const r = this.ratio(f);
      const show = formatOf(f);
      rows.push([
        f.label,
        show(f.value),
        f.unit,
        f.runs.map(show).join(' / '),
        r === undefined ? '' : `${round(r, 2)} × ${f.ceiling}`,
        this.targetText(f),
        this.verdict(f),
      ]);
    }
    const widths = rows[0]!.map((_, i) => Math.max(...rows.map((row) => row[i]!.length)));
    const line = (row: string[]) => `| ${row.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
    return [
      line(rows[0]!),
      `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`,
      ...rows.slice(1).map(line),
    ].join('\n');
  }

  /** Writes the figures and the machine to `path`; `merge` keeps the baseline's other figures. */
  write(path: string, meta: Record<string, unknown>, merge: boolean): void {
    // A scenario measured in this run replaces all of its earlier figures, including ones it no
    // longer reports; the others are kept.
    const measured = new Set([...this.figures.keys()].map(scenarioOf));
    const kept = merge ? [...this.baseline].filter(([id]) => !measured.has(scenarioOf(id))) : [];
    const figures: Record<string, unknown> = Object.fromEntries(kept);
    for (const f of this.figures.values()) {
      figures[f.id] = { ...f, ratioToCeiling: this.ratio(f) ?? null, verdict: this.verdict(f) || null };
    }
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, `${JSON.stringify({ ...meta, notes: this.notes, figures }, null, 2)}\n`);
  }
}

/** The scenario of a figure id: what comes before its first dot (`soak.rss.end` → `soak`). */
function scenarioOf(id: string): string {
  return id.split('.', 1)[0] ?? id;
}

export function machine(): Record<string, unknown> {
  const cpu = cpus();
  return {
    cores: cpu.length,
    cpu: cpu[0]?.model ?? 'unknown',
    node: process.version,
    platform: process.platform,
  };
}

/** Unit of a figure that is one rate divided by another (alternated configurations). */
export const RATIO_UNIT = '×';

/** How a figure's numbers print: ratios with three decimals (a target of 0.95 or 0.97), others by fmt. */
const formatOf = (f: Figure): ((n: number) => string) =>
  f.unit === RATIO_UNIT ? (n) => (Number.isFinite(n) ? n.toFixed(3) : String(n)) : fmt;

export function fmt(n: number): string {
  if (!Number.isFinite(n)) return String(n);
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  return String(round(n, 1));
}
