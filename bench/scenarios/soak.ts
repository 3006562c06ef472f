/**
 * Soak (`npm run bench -- --soak`): all roles, MQTT ingestion at half the maximum sustained rate;
 * after a warm-up (30 s), a window of `soakS` seconds. RSS of the Vigil process idle, at the
 * window's start, every 30 s and at its end; then every accepted payload must be processed
 * (counts compared).
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
    const rssIdle = (await bv.vigil.rssBytes()) / MB;
    // Like every other figure, the soak is measured after a warm-up: V8 sizes its young generation
    // and old-space headroom in the first seconds under load, which is sizing, not growth.
    const warmS = Math.min(30, Math.max(5, opts.soakS / 10));
    ctx.log(
      `soak: ${warmS} s warm-up, then ${opts.soakS} s at ${rate} payloads/s; RSS idle ${Math.round(rssIdle)} MB`,
    );
    await ingestion.start(rate, warmS + opts.soakS + 10, opts.devices);
    await sleep(warmS * 1000);
    const rssStart = (await bv.vigil.rssBytes()) / MB;
    const heapStart = (await bv.vigil.heapAfterGcBytes()) / MB;
    const acceptedAtStart = ingestion.accepted();
    const samples: number[] = [rssStart];
    const until = Date.now() + opts.soakS * 1000;
    while (Date.now() < until) {
      await sleep(Math.min(30_000, until - Date.now()));
      const mem = await bv.vigil.memory();
      samples.push(mem.rss / MB);
      ctx.log(`soak: ${describeMemory(mem)}, ${ingestion.accepted()} accepted`);
    }
    const rssEnd = samples.at(-1)!;
    const heapEnd = (await bv.vigil.heapAfterGcBytes()) / MB;
    const acceptedInWindow = ingestion.accepted() - acceptedAtStart;
    await ingestion.stop();
    const accepted = ingestion.accepted();
    const caughtUp = await waitProcessed(bv.vigil, accepted, 300_000);
    const processed = await processedCount(bv.vigil);
    report.add({
      id: 'soak.rss.idle',
      label: 'soak: Vigil RSS idle, before any load',
      unit: 'MB',
      runs: [rssIdle],
    });
    report.add({
      id: 'soak.rss.start',
      label: `soak: Vigil RSS at start (after ${warmS} s of warm-up at ${rate}/s)`,
      unit: 'MB',
      runs: [rssStart],
    });
    report.add({
      id: 'soak.rss.end',
      label: `soak: Vigil RSS after ${opts.soakS} s at ${rate}/s`,
      unit: 'MB',
      runs: [rssEnd],
      note: `${Math.round(acceptedInWindow / opts.soakS)} payloads/s accepted in the window`,
    });
    report.add({
      id: 'soak.rss.growth',
      label: `soak: RSS growth over the ${opts.soakS} s (end − start)`,
      unit: 'MB',
      runs: [rssEnd - rssStart],
      target: { max: 50 },
    });
    report.add({
      id: 'soak.rss.growthFromIdle',
      label: 'soak: RSS end − idle (heap sizing under load included)',
      unit: 'MB',
      runs: [rssEnd - rssIdle],
    });
    // The live working set after a full GC, at the start and at the end of the window.
    report.add({
      id: 'soak.heap.growth',
      label: `soak: V8 heap in use after a full GC, growth over the ${opts.soakS} s`,
      unit: 'MB',
      runs: [heapEnd - heapStart],
      target: { max: 50 },
      note: `${heapStart.toFixed(0)} MB → ${heapEnd.toFixed(0)} MB; RSS also holds heap headroom V8 keeps after collections, so a flat heap with growing RSS is sizing, not a leak`,
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
