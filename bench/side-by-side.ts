/**
 * Two builds measured in the same minutes: `node --no-node-snapshot bench/side-by-side.ts --with
 * <worktree of the other build> -- <bench options>` starts this tree's bench (b) and the other
 * tree's (a) at once, in lockstep (lib/lockstep.ts: both wait for each other
 * before every HTTP load), and prints, for every measured window both reported, the CPU per unit
 * of each and the ratio b ÷ a. The other tree needs a bench with `--lockstep` (this one or later).
 * Both share the host's two cores, so absolute figures are higher than in a run alone; the ratios
 * are what it is for. Each tree writes its own bench/results/latest.json; the logs stay in the
 * temporary directory printed at the start.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';

const here = new URL('..', import.meta.url).pathname;
const dashdash = process.argv.indexOf('--');
const { values } = parseArgs({
  args: process.argv.slice(2, dashdash < 0 ? undefined : dashdash),
  options: { with: { type: 'string' } },
});
if (!values.with) throw new Error('usage: bench/side-by-side.ts --with <other worktree> -- <bench options>');
const benchArgs = dashdash < 0 ? [] : process.argv.slice(dashdash + 1);
const dir = mkdtempSync(join(tmpdir(), 'vigil-side-by-side-'));
const builds = [
  { name: 'a', root: resolve(values.with) },
  { name: 'b', root: here },
];
process.stderr.write(`side by side: a = ${builds[0]!.root}, b = ${builds[1]!.root}; logs in ${dir}\n`);

const children = builds.map(({ name, root }) => {
  const other = name === 'a' ? 'b' : 'a';
  const child = spawn(
    process.execPath,
    ['--no-node-snapshot', 'bench/run.ts', ...benchArgs, '--lockstep', `${dir}:${name}:${other}`],
    // Each run in a process group of its own, with its Redis, influxd and Vigil processes, so that
    // stopping a run stops all of them.
    { cwd: root, stdio: ['ignore', 'ignore', 'pipe'], detached: true },
  );
  child.stderr.pipe(createWriteStream(join(dir, `${name}.log`)));
  return { name, child };
});
function stopAll(): void {
  for (const { child } of children) {
    if (child.exitCode !== null || child.pid === undefined) continue;
    try {
      process.kill(-child.pid, 'SIGINT');
    } catch {
      // Already gone.
    }
  }
}
// Ctrl-C reaches this process only: the runs are in groups of their own.
process.once('SIGINT', () => {
  stopAll();
  process.exitCode = 130;
});
const exits = children.map(
  ({ name, child }) =>
    new Promise<void>((done, fail) => {
      child.on('exit', (code, signal) => {
        if (code === 0) return done();
        // The other run would wait for this one at its next step: stop it too.
        stopAll();
        fail(new Error(`bench ${name} exited with ${code ?? signal}; see ${dir}/${name}.log`));
      });
    }),
);
await Promise.all(exits);

/** `<label>, run N: CPU per <unit>: vigil X µs, …` notes of a finished run, by label and run. */
function windows(root: string): Map<string, Map<string, number>> {
  const report = JSON.parse(readFileSync(join(root, 'bench/results/latest.json'), 'utf8')) as {
    notes: string[];
  };
  const found = new Map<string, Map<string, number>>();
  for (const note of report.notes) {
    const m = /^(.*, run \d+): CPU per \w+: (.*?)(?: \(|;|$)/.exec(note);
    if (!m) continue;
    const parts = new Map<string, number>();
    for (const part of m[2]!.split(', ')) {
      const [proc, us] = part.split(' ');
      if (proc && us) parts.set(proc, Number(us));
    }
    found.set(m[1]!, parts);
  }
  return found;
}
const [a, b] = builds.map((x) => windows(x.root));
for (const [label, pa] of a!) {
  const pb = b!.get(label);
  if (!pb) continue;
  // Vigil and its stores: every process but the bench's load generator.
  const service = (p: Map<string, number>) =>
    [...p].filter(([k]) => k !== 'bench').reduce((sum, [, v]) => sum + v, 0);
  const line = [...pa.keys()]
    .filter((k) => k !== 'bench')
    .map((k) => `${k} ${pa.get(k)} → ${pb.get(k) ?? '?'}`)
    .join(', ');
  process.stdout.write(
    `${label}: CPU µs ${line}; b ÷ a: vigil ${((pb.get('vigil') ?? NaN) / (pa.get('vigil') ?? NaN)).toFixed(2)}, all but the bench ${(service(pb) / service(pa)).toFixed(2)}\n`,
  );
}
