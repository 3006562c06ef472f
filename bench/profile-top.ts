/**
 * Prints the functions with the most self time in a V8 .cpuprofile (from `npm run bench -- --profile`):
 * `node bench/profile-top.ts bench/results/profiles/<file>.cpuprofile [N]`.
 */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, countArg] = process.argv.slice(2);
if (!file) {
  process.stderr.write('usage: node bench/profile-top.ts <file.cpuprofile> [N]\n');
  process.exit(2);
}
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const selfUs = new Map<string, number>();
let totalUs = 0;
profile.samples.forEach((id, i) => {
  const node = byId.get(id);
  const dt = profile.timeDeltas[i] ?? 0;
  if (!node) return;
  const { functionName, url, lineNumber } = node.callFrame;
  const where = url.replace(/^file:\/\/.*?\/(node_modules|src|bench)\//, '$1/');
  const key = `${functionName || '(anonymous)'} ${where}:${lineNumber + 1}`;
  selfUs.set(key, (selfUs.get(key) ?? 0) + dt);
  totalUs += dt;
});
const top = [...selfUs].sort((a, b) => b[1] - a[1]).slice(0, Number(countArg ?? 40));
process.stdout.write(`total ${(totalUs / 1e6).toFixed(1)} s sampled\n`);
for (const [key, us] of top) {
  process.stdout.write(
    `${((100 * us) / totalUs).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(7)} ms  ${key}\n`,
  );
}
