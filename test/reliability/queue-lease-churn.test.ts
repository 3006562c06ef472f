/**
 * Lease churn: leases of a few hundred ms, worker processes started and stopped (gracefully and by
 * SIGKILL) every couple of seconds for the whole run, under load — partitions change hands over
 * and over, and on a loaded machine workers also lose leases to plain CPU starvation. Fencing keeps
 * every effect to the current owner: every acknowledged payload applied once, transitions as in
 * order, one ingestion-log entry each.
 */
import { describe, expect, it } from 'vitest';
import { sendNumbered } from '../support/generator.ts';
import { expectNoLoss, ingestLogDuplicates, provisionNumbered, settle } from '../support/fault-run.ts';
import { startPipeline } from '../support/pipeline.ts';
import { childCounter, spawnVigil, type ChildVigil } from '../support/workers.ts';

const LONG = Boolean(process.env.VIGIL_TEST_LONG);
/** Payloads, paced so that the run lasts at least RUN_SECONDS. */
const COUNT = LONG ? 12_000 : 4000;
const RUN_SECONDS = LONG ? 60 : 20;
/** The test's whole budget; settling gets what sending left of it, so a stall reports its state. */
const TIMEOUT_MS = 300_000;

describe('numbered run under lease churn', () => {
  it(
    'keeps every effect to the current owner while partitions change hands again and again',
    { timeout: TIMEOUT_MS },
    async () => {
      const began = Date.now();
      const p = await startPipeline({ roles: 'gateway', partitionLeaseMs: 300, ingestLogSize: 100_000 });
      const devices = Array.from({ length: 20 }, (_, i) => `dev-${i}`);
      const { key } = await provisionNumbered(p, 'acme', devices);
      const start = () =>
        spawnVigil(p.config, { VIGIL_ROLES: 'worker', VIGIL_LOG_LEVEL: 'info' }, { captureOutput: true });
      /** Steps refused by fencing, over every worker of the run (read from each before it stops). */
      let fenced = 0;
      // A worker that cannot answer counts none; one that exited by itself fails the run.
      const fencedOf = (w: ChildVigil) =>
        childCounter(w, 'vigil_worker_fenced_steps_total').catch((err: unknown) => {
          if (w.process.exitCode !== null) throw err;
          return 0;
        });
      const workers: ChildVigil[] = [start(), start(), start()];
      let churns = 0;
      let sending = true;
      const churn = (async () => {
        while (sending) {
          await new Promise((resolve) => setTimeout(resolve, 2000));
          if (!sending) break;
          // Stop the oldest (gracefully one time, SIGKILL the next) and start a new one.
          const old = workers.shift()!;
          fenced += await fencedOf(old);
          await old.kill(churns % 2 === 0 ? 'SIGTERM' : 'SIGKILL');
          workers.push(start());
          churns += 1;
        }
      })();
      const started = Date.now();
      // 8 HTTP lanes pausing `pause` ms after each payload: about COUNT payloads over RUN_SECONDS.
      const pause = Math.floor((RUN_SECONDS * 1000 * 8) / COUNT);
      const run = await sendNumbered({
        http: { url: p.gatewayUrl, key },
        devices,
        count: COUNT,
        baseTimeMs: Date.now() - 3600_000,
        httpPauseMs: pause,
      }).finally(() => (sending = false));
      await churn;
      const seconds = (Date.now() - started) / 1000;
      // What sending left of the budget, less a margin for the checks after it.
      const check = await settle(p, 'acme', run, TIMEOUT_MS - 30_000 - (Date.now() - began));
      for (const w of workers) fenced += await fencedOf(w);
      expectNoLoss(
        `lease churn (${churns} worker restarts in ${Math.round(seconds)} s, leases of 300 ms)`,
        run,
        {
          ...check,
          fenced,
        },
      );
      expect(await ingestLogDuplicates(p, 'acme')).toEqual([]);
      expect(seconds).toBeGreaterThanOrEqual(RUN_SECONDS);
      expect(churns).toBeGreaterThanOrEqual(RUN_SECONDS / 2 - 2);
    },
  );
});
