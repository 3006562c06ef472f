/**
 * Soak (`npm run bench -- --soak`): all roles, MQTT ingestion at half the maximum sustained rate
 * for `soakS` seconds. RSS of the Vigil process at start, after the first 30 s and at the end;
 * then every accepted payload must be processed (counts compared).
 */
import type { BenchContext } from '../lib/context.ts';
import { sleep, startBenchVigil } from '../lib/context.ts';
import { Ingestion, processedCount, waitProcessed } from './end-to-end.ts';
import { halfMaxRate } from './read-api.ts';

const MB = 1024 * 1024;

export async function runSoak(ctx: BenchContext): Promise<void> {
  const { opts, report } = ctx;
  const rate = opts.soakRate ?? halfMaxRate(ctx);
  const bv = await startBenchVigil(ctx, 'gateway,mqtt,worker,scheduler,api');
  const ingestion = new Ingestion(bv);
  try {
    const rssStart = (await bv.vigil.rssBytes()) / MB;
    ctx.log(`soak: ${opts.soakS} s at ${rate} payloads/s; RSS at start ${Math.round(rssStart)} MB`);
    await ingestion.start(rate, opts.soakS + 10, opts.devices);
    const warmS = Math.min(30, opts.soakS / 4);
    await sleep(warmS * 1000);
    const rssWarm = (await bv.vigil.rssBytes()) / MB;
    const heapWarm = (await bv.vigil.heapAfterGcBytes()) / MB;
    const samples: number[] = [rssWarm];
    const until = Date.now() + (opts.soakS - warmS) * 1000;
    while (Date.now() < until) {
      await sleep(Math.min(30_000, until - Date.now()));
      const mem = await bv.vigil.memory();
      samples.push(mem.rss / MB);
      ctx.log(`soak: ${describeMemory(mem)}, ${ingestion.accepted()} accepted`);
    }
    const rssEnd = samples.at(-1)!;
    const heapEnd = (await bv.vigil.heapAfterGcBytes()) / MB;
    await ingestion.stop();
    const accepted = ingestion.accepted();
    const caughtUp = await waitProcessed(bv.vigil, accepted, 300_000);
    const processed = await processedCount(bv.vigil);
    report.add({ id: 'soak.rss.start', label: 'soak: Vigil RSS at start', unit: 'MB', runs: [rssStart] });
    report.add({
      id: 'soak.rss.warm',
      label: `soak: Vigil RSS after ${warmS} s`,
      unit: 'MB',
      runs: [rssWarm],
    });
    report.add({
      id: 'soak.rss.end',
      label: `soak: Vigil RSS after ${opts.soakS} s at ${rate}/s`,
      unit: 'MB',
      runs: [rssEnd],
    });
    report.add({
      id: 'soak.rss.growth',
      label: 'soak: RSS growth (end − start)',
      unit: 'MB',
      runs: [rssEnd - rssStart],
      target: { max: 50 },
    });
    // Heap sizing in the first seconds is not a leak; what follows the warm-up is the trend.
    report.add({
      id: 'soak.rss.growthAfterWarmup',
      label: `soak: RSS growth after the first ${warmS} s`,
      unit: 'MB',
      runs: [rssEnd - rssWarm],
      target: { max: 50 },
    });
    // Under load: the live working set after a full GC, at the end of the warm-up and at the end.
    report.add({
      id: 'soak.heap.growth',
      label: `soak: V8 heap in use after a full GC, growth after the first ${warmS} s`,
      unit: 'MB',
      runs: [heapEnd - heapWarm],
      target: { max: 50 },
      note: `${heapWarm.toFixed(0)} MB → ${heapEnd.toFixed(0)} MB; RSS also holds heap headroom V8 keeps after collections, so a flat heap with growing RSS is sizing, not a leak`,
    });
    report.add({
      id: 'soak.accepted',
      label: 'soak: payloads accepted (PUBACK)',
      unit: 'payloads',
      runs: [accepted],
    });
    report.add({
      id: 'soak.processed',
      label: 'soak: payloads processed',
      unit: 'payloads',
      runs: [processed],
    });
    report.add({
      id: 'soak.unprocessed',
      label: 'soak: accepted but not processed',
      unit: 'payloads',
      runs: [Math.max(0, accepted - processed)],
      target: { max: 0 },
      note: caughtUp ? 'worker caught up' : 'worker had not caught up after 300 s',
    });
    report.notes.push(`soak RSS samples (MB): ${samples.map((s) => Math.round(s)).join(', ')}`);
    report.notes.push(`soak memory at the end: ${describeMemory(await bv.vigil.memory())}`);
  } finally {
    await ingestion.stop();
    await bv.vigil.stop();
  }
}

/** RSS and what V8 accounts for of it, in MB. */
function describeMemory(mem: NodeJS.MemoryUsage & { spaces: Record<string, number> }): string {
  const mb = (n: number) => Math.round(n / MB);
  const spaces = Object.entries(mem.spaces)
    .filter(([, size]) => size > 0)
    .map(([name, size]) => `${name.replace(/_space$/, '')} ${size}`)
    .join(', ');
  return (
    `RSS ${mb(mem.rss)} MB (V8 heap ${mb(mem.heapUsed)} used of ${mb(mem.heapTotal)} reserved: ${spaces}; ` +
    `external ${mb(mem.external)} incl. ${mb(mem.arrayBuffers)} array buffers)`
  );
}
