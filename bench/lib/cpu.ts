/**
 * CPU time per process from /proc (Linux), to say where the time of a scenario went: CPU µs per
 * payload in Vigil, Redis, InfluxDB and the bench's own load generator.
 */
import { readFileSync } from 'node:fs';

const TICKS_PER_SECOND = 100;

/** User + system CPU seconds of a process so far; NaN when it cannot be read. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may contain spaces) start after the last ')'.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
  } catch {
    return Number.NaN;
  }
}

export type CpuSnapshot = Record<string, number>;

export const snapshot = (pids: Record<string, number>): CpuSnapshot =>
  Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuSeconds(pid)]));

/** CPU µs per unit of work between two snapshots, summed over the processes `names` (default: all). */
export function cpuPerUnitUs(
  before: CpuSnapshot,
  after: CpuSnapshot,
  units: number,
  names: readonly string[] = Object.keys(before),
): number {
  let seconds = 0;
  for (const name of names) seconds += after[name]! - before[name]!;
  return (seconds * 1e6) / units;
}

/** "vigil 180 µs, redis 40 µs, …" per unit of work between two snapshots. */
export function describePerUnit(
  before: CpuSnapshot,
  after: CpuSnapshot,
  units: number,
  unit: string,
): string {
  const parts = Object.keys(before).map((name) => {
    const us = cpuPerUnitUs(before, after, units, [name]);
    return `${name} ${Number.isFinite(us) ? Math.round(us) : '?'} µs`;
  });
  return `CPU per ${unit}: ${parts.join(', ')}`;
}

/**
 * CPU µs per unit of work between two snapshots, summed over the processes of Vigil and the stores
 * it uses (every one but the bench's load generator, `bench`).
 */
export const serviceCpuPerUnit = (before: CpuSnapshot, after: CpuSnapshot, units: number): number =>
  cpuPerUnitUs(
    before,
    after,
    units,
    Object.keys(before).filter((name) => name !== 'bench'),
  );
