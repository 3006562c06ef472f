/**
 * InfluxDB's CPU per line by request size (50, 200, 1,000, 5,000 lines): the measurement behind the
 * history writer's group commit (BENCHMARKS.md). Starts its own influxd on a free port in a
 * temporary directory, writes 100,000 readings-shaped lines per size, prints influxd's CPU per
 * line from /proc, stops. Run: node bench/influx-request-size.ts
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startInflux } from '../scripts/lib/local-services.ts';
const dir = mkdtempSync(join(tmpdir(), 'vigil-influx-size-'));
const influx = await startInflux({ dataDir: dir });
await fetch(`${influx.url}/query`, { method: 'POST', body: new URLSearchParams({ q: 'CREATE DATABASE b' }) });
/** influxd's user + system CPU time in ms (clock ticks of 10 ms). */
const cpu = () => {
  const f = readFileSync(`/proc/${influx.process?.pid ?? 0}/stat`, 'utf8')
    .split(') ')[1]!
    .split(' ');
  return (Number(f[11]) + Number(f[12])) * 10;
};
let t = 1_700_000_000_000;
const line = (i: number) =>
  `readings,device=dev-${i % 1000},env=bench,sensor=S${i % 4},sensorType=number value=${i % 50},severity=0i ${(t += 1)}000000`;
const write = async (lines: string[]) => {
  const r = await fetch(`${influx.url}/write?db=b&precision=ns`, { method: 'POST', body: lines.join('\n') });
  await r.arrayBuffer();
};
// Every series exists before measuring, so no size pays for creating them.
await write(Array.from({ length: 4000 }, (_, i) => line(i)));
for (const per of (process.env.SIZES ?? '50,200,1000,5000').split(',').map(Number)) {
  const total = 100_000;
  const c0 = cpu();
  const w0 = Date.now();
  for (let sent = 0; sent < total; sent += per) {
    await write(Array.from({ length: per }, (_, i) => line(i)));
  }
  console.log(
    `${per} lines/request: ${(((cpu() - c0) * 1000) / total).toFixed(1)} µs CPU per line, wall ${Date.now() - w0} ms`,
  );
}
await influx.stop();
rmSync(dir, { recursive: true, force: true });
