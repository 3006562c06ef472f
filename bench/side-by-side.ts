/**
 * Two benches measured in the same minutes, in lockstep (lib/lockstep.ts: both wait for each other
 * before every HTTP load and every window of an end-to-end feature cost):
 *  - two builds: `node --no-node-snapshot bench/side-by-side.ts --with <worktree of the other
 *    build> -- <bench options>` runs the other tree's bench (a) and this tree's (b);
 *  - two configurations of this build, for what a feature costs end to end: `… side-by-side.ts
 *    --a='--config a' --b='--config b' -- --only recent-payloads --e2e-rate N` (`--a`/`--b`:
 *    options of one side only).
 * `--pin`: a on the first core, b on the second, each with every process it starts (taskset): the
 * runs no longer take CPU from each other, each is a one-core host of its own in the same minutes.
 * For every measured window both reported it prints the CPU per unit of each and the ratio b ÷ a,
 * and where windows say what they processed, the ratio of those rates; then the medians. The other
 * tree needs a bench with `--lockstep` and `--results` (this one or later). Both share the host's
 * two cores, so absolute figures are higher (and rates lower) than in a run alone; the ratios are
 * what it is for. The reports and logs stay in the temporary directory printed at the start.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { median } from './lib/stats.ts';

const here = new URL('..', import.meta.url).pathname;
const dashdash = process.argv.indexOf('--');
const { values } = parseArgs({
  args: process.argv.slice(2, dashdash < 0 ? undefined : dashdash),
  options: {
    with: { type: 'string' },
    a: { type: 'string' },
    b: { type: 'string' },
    pin: { type: 'boolean', default: false },
  },
});
if (!values.with && values.a === undefined && values.b === undefined)
  throw new Error(
    'usage: bench/side-by-side.ts [--with <other worktree>] [--a=<options of a>] [--b=<options of b>] [--pin] -- <bench options>',
  );
const benchArgs = dashdash < 0 ? [] : process.argv.slice(dashdash + 1);
const dir = mkdtempSync(join(tmpdir(), 'vigil-side-by-side-'));
const words = (s: string | undefined) => (s ?? '').split(/\s+/).filter((w) => w !== '');
const builds = [
  { name: 'a', root: resolve(values.with ?? here), args: words(values.a) },
  { name: 'b', root: here, args: words(values.b) },
];
process.stderr.write(
  `side by side: a = ${builds[0]!.root} ${builds[0]!.args.join(' ')}, b = ${builds[1]!.root} ${builds[1]!.args.join(' ')}; logs in ${dir}\n`,
);
const resultsOf = (name: string) => join(dir, `${name}.json`);

const children = builds.map(({ name, root, args }, i) => {
  const other = name === 'a' ? 'b' : 'a';
  // --pin: each run, with every process it starts, on a core of its own (taskset).
  const [command, ...prefix] = values.pin
    ? ['taskset', '-c', String(i), process.execPath]
    : [process.execPath];
  const child = spawn(
    command,
    [
      ...prefix,
      '--no-node-snapshot',
      'bench/run.ts',
      ...benchArgs,
      ...args,
      '--lockstep',
      `${dir}:${name}:${other}`,
      '--results',
      resultsOf(name),
    ],
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

interface Measured {
  cpu: Map<string, number>;
  /** What the window processed, per second, when it says. */
  processed?: number;
}

/**
 * The measured windows of a finished run, by label: `<label>, run N: … CPU per <unit>: vigil X µs, …`
 * (HTTP loads) and `<scenario> window N: <configuration>: processed R/s, … CPU per payload: …`
 * (feature costs, the label without the configuration, which differs between the sides).
 */
function windows(name: string): Map<string, Measured> {
  const report = JSON.parse(readFileSync(resultsOf(name), 'utf8')) as { notes: string[] };
  const found = new Map<string, Measured>();
  for (const note of report.notes) {
    const label = /^(.*?(?:, run| window) \d+):/.exec(note)?.[1];
    const cpu = /CPU per \w+: ([^;(]*)/.exec(note)?.[1];
    if (!label || !cpu) continue;
    const parts = new Map<string, number>();
    for (const part of cpu.trim().split(', ')) {
      const [proc, us] = part.split(' ');
      if (proc && us) parts.set(proc, Number(us));
    }
    const processed = /processed (\d+)\/s/.exec(note)?.[1];
    found.set(label, { cpu: parts, ...(processed ? { processed: Number(processed) } : {}) });
  }
  return found;
}
const [a, b] = builds.map((x) => windows(x.name));
// Vigil and its stores: every process but the bench's load generator.
const service = (p: Map<string, number>) =>
  [...p].filter(([k]) => k !== 'bench').reduce((sum, [, v]) => sum + v, 0);
const cpuRatios: number[] = [];
const rateRatios: number[] = [];
for (const [label, wa] of a!) {
  const wb = b!.get(label);
  if (!wb) continue;
  const line = [...wa.cpu.keys()]
    .filter((k) => k !== 'bench')
    .map((k) => `${k} ${wa.cpu.get(k)} → ${wb.cpu.get(k) ?? '?'}`)
    .join(', ');
  const cpuRatio = service(wb.cpu) / service(wa.cpu);
  cpuRatios.push(cpuRatio);
  let rates = '';
  if (wa.processed !== undefined && wb.processed !== undefined) {
    rateRatios.push(wb.processed / wa.processed);
    rates = `; processed ${wa.processed} → ${wb.processed}/s, b ÷ a ${(wb.processed / wa.processed).toFixed(2)}`;
  }
  process.stdout.write(
    `${label}: CPU µs ${line}; b ÷ a: vigil ${((wb.cpu.get('vigil') ?? NaN) / (wa.cpu.get('vigil') ?? NaN)).toFixed(2)}, all but the bench ${cpuRatio.toFixed(2)}${rates}\n`,
  );
}
const list = (r: number[]) => r.map((x) => x.toFixed(2)).join(' · ');
process.stdout.write(
  `median of ${cpuRatios.length} windows: CPU per unit of all but the bench, b ÷ a ${median(cpuRatios).toFixed(2)} (${list(cpuRatios)})` +
    (rateRatios.length > 0
      ? `; processed, b ÷ a ${median(rateRatios).toFixed(2)} (${list(rateRatios)})`
      : '') +
    '\n',
);
