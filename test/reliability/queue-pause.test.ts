/**
 * The fault that breaks lease-based queues in practice: a worker paused (SIGSTOP: a GC pause, a
 * frozen VM) while it holds processing steps, past its lease. The other worker takes its partitions
 * and processes their pending entries; then the paused one wakes up (SIGCONT) and tries to finish
 * its old steps. Fencing tokens refuse them: every acknowledged payload is applied once, each
 * device's transitions are those of an in-order run, no payload has two ingestion-log entries nor
 * two recent-payload entries, and the stale worker counts its refused steps, while the other one,
 * handing partitions back to it only between its own steps, has none refused. The pause comes while
 * the worker holds steps between their state and their acknowledgement, where it does its harm:
 * the worker holds them on the test's signal (test/support/holding-worker.ts) until it wakes.
 */
import { describe, expect, it } from 'vitest';
import { sendNumbered } from '../support/generator.ts';
import {
  expectNoLoss,
  ingestLogDuplicates,
  leaseHolders,
  NUMBERED_COUNT,
  provisionNumbered,
  recentPayloadDuplicates,
  settle,
} from '../support/fault-run.ts';
import { HOLDING_STEP } from '../support/holding-worker.ts';
import { startPipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { childCounter, spawnVigil } from '../support/workers.ts';

describe('numbered run, a worker paused past its lease', () => {
  it(
    'refuses the stale worker’s steps: applied once, transitions in order, one ingestion-log entry each',
    { timeout: 240_000 },
    async () => {
      const p = await startPipeline({ roles: 'gateway', partitionLeaseMs: 1000, ingestLogSize: 100_000 });
      const devices = Array.from({ length: 20 }, (_, i) => `dev-${i}`);
      const { key } = await provisionNumbered(p, 'acme', devices);
      const workers = [0, 1].map(() =>
        spawnVigil(
          p.config,
          {
            VIGIL_ROLES: 'worker',
            VIGIL_LOG_LEVEL: 'info',
            // Every payload kept (150 per device), so that one kept twice would show.
            VIGIL_DEVICE_RECENT_PAYLOADS: '256',
          },
          { captureOutput: true, script: 'test/support/holding-worker.ts' },
        ),
      );
      await Promise.all(workers.map((w) => w.ports()));
      const [stalled, other] = workers as [(typeof workers)[0], (typeof workers)[0]];
      let paused = false;
      const run = await sendNumbered({
        http: { url: p.gatewayUrl, key },
        devices,
        count: NUMBERED_COUNT,
        baseTimeMs: Date.now() - 3600_000,
        onAck: async (acked) => {
          if (paused || acked < NUMBERED_COUNT / 3) return;
          paused = true;
          await eventually(
            async () => (new Set((await leaseHolders(p)).filter(Boolean)).size === 2 ? true : undefined),
            { timeoutMs: 30_000, message: 'both workers to hold partitions' },
          );
          // Its steps from now on wait between their state and their acknowledgement: paused with one.
          stalled.process.kill('SIGUSR2');
          await eventually(() => stalled.output().includes(HOLDING_STEP), {
            timeoutMs: 30_000,
            message: 'a step of the worker to pause held in flight',
          });
          stalled.process.kill('SIGSTOP');
          // Past the lease: the other worker takes every partition over…
          await eventually(
            async () => {
              const holders = await leaseHolders(p);
              return holders.every((t) => t !== '' && t === holders[0]) ? true : undefined;
            },
            { timeoutMs: 30_000, message: 'the other worker to take every partition' },
          );
          // …and processes the stalled worker's pending entries before it wakes up.
          const logged = await p.redis.llen(p.keys.ingestLog('acme'));
          await eventually(
            async () => ((await p.redis.llen(p.keys.ingestLog('acme'))) > logged + 200 ? true : undefined),
            { timeoutMs: 30_000, message: 'the other worker to process' },
          );
          stalled.process.kill('SIGCONT');
          stalled.process.kill('SIGUSR2'); // its held steps go on, to their fence
        },
      });
      expect(paused).toBe(true);
      const check = await settle(p, 'acme', run).catch((err: unknown) => {
        for (const w of workers)
          console.info(
            w
              .output()
              .split('\n')
              .filter((l) => !l.includes('"level":30'))
              .slice(-30)
              .join('\n'),
          );
        throw err;
      });
      const fenced = await childCounter(stalled, 'vigil_worker_fenced_steps_total');
      expectNoLoss('worker paused past its lease (SIGSTOP)', run, { ...check, fenced });
      expect(await ingestLogDuplicates(p, 'acme')).toEqual([]);
      expect(await recentPayloadDuplicates(p, 'acme', devices)).toEqual([]);
      expect(fenced).toBeGreaterThan(0);
      // The worker that was never paused hands partitions back to the one that woke up only
      // between its steps: none of its own steps is refused.
      expect(await childCounter(other, 'vigil_worker_partitions_handed_back_total')).toBeGreaterThan(0);
      expect(await childCounter(other, 'vigil_worker_fenced_steps_total')).toBe(0);
    },
  );
});
