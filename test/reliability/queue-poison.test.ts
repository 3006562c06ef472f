/**
 * A poison message: a queue entry whose payload makes the worker that processes it die (SIGKILL,
 * every time). The crash counts kept in Redis survive the restarts: the entries of the step that
 * died are retried as a group, halved at each further crash, until the culprit is alone; after
 * VIGIL_POISON_DELIVERIES crashes on its own it is dead-lettered with its reason, the healthy entries
 * that crashed with it are processed once, and the rest of its partition goes on.
 */
import { readEntry } from '../../src/ingest/ingest-log.ts';
import { execFile } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { countEntries, listDeadLetters } from '../../src/queue/ingest-queue.ts';
import { provisionComfort, startPipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { spawnVigil } from '../support/workers.ts';

const POISON_DELIVERIES = 3;

describe('a queue entry that kills its worker', () => {
  it(
    'is dead-lettered after VIGIL_POISON_DELIVERIES crashes, and everything else is processed once',
    { timeout: 120_000 },
    async () => {
      const p = await startPipeline({
        roles: 'gateway',
        partitionLeaseMs: 500,
        poisonDeliveries: POISON_DELIVERIES,
        ingestLogSize: 10_000,
      });
      const devices = ['d0', 'd1', 'd2', 'd3'];
      const { key } = await provisionComfort(p, 'acme', devices);
      // Queued before any worker runs, one queue entry per payload (each posted on its own).
      const ids = new Map<string, string>();
      for (let n = 0; n < 10; n++) {
        for (const device of devices) {
          const poison = device === 'd1' && n === 5;
          const body = JSON.stringify({
            deviceName: device,
            Temperature: n,
            ...(poison ? { poison: true } : {}),
          });
          const res = await p.post('gateway/submit', key, body);
          expect(res.status).toBe(202);
          ids.set(`${device}/${n}`, ((await res.json()) as { data: { id: string } }).data.id);
        }
      }
      // One worker at a time, restarted whenever it dies, until the queue is empty.
      let crashes = 0;
      for (;;) {
        const worker = spawnVigil(
          p.config,
          { VIGIL_ROLES: 'worker', VIGIL_LOG_LEVEL: 'error' },
          {
            script: 'test/support/crashing-worker.ts',
          },
        );
        const outcome = await Promise.race([
          worker.exited.then(() => 'crashed' as const),
          eventually(
            async () =>
              (await countEntries(p.redis, p.keys, p.config.queuePartitions)) === 0 ? true : undefined,
            { timeoutMs: 60_000, message: 'the queue to empty' },
          ).then(() => 'drained' as const),
        ]);
        if (outcome === 'drained') {
          await worker.kill();
          break;
        }
        crashes += 1;
        // The step that died first, then halvings of its entries (40 at most here), then the culprit alone.
        expect(crashes).toBeLessThanOrEqual(1 + 7 + POISON_DELIVERIES);
      }
      expect(crashes).toBeGreaterThanOrEqual(POISON_DELIVERIES);

      const dead = await listDeadLetters(p.redis, p.keys);
      expect(dead).toHaveLength(1);
      expect(dead[0]).toMatchObject({ items: 1 });
      expect(dead[0]!.reason).toMatch(new RegExp(`crashed its worker ${POISON_DELIVERIES} times on its own`));
      // Every other payload was processed exactly once: one ingestion-log entry each, accepted.
      const log = (await p.redis.lrange(p.keys.ingestLog('acme'), 0, -1)).map(readEntry);
      const byId = new Map<string, string[]>();
      for (const e of log) byId.set(e.ingestId, [...(byId.get(e.ingestId) ?? []), e.outcome]);
      for (const [name, id] of ids) {
        expect([name, byId.get(id)]).toEqual([name, [name === 'd1/5' ? 'rejected' : 'accepted']]);
      }
      // d1's values after the poison entry were applied too: its partition went on.
      const latest = await p.redis.hget(p.keys.deviceState('acme', 'd1'), 'Temperature|v');
      expect(latest).toBe('9');

      // The operator sees it, with its reason.
      const cli = await new Promise<string>((resolve, reject) =>
        execFile(
          'node_modules/.bin/node',
          ['--no-node-snapshot', 'src/cli/main.ts', 'queue', 'dead-letters'],
          {
            env: {
              PATH: process.env.PATH ?? '',
              VIGIL_REDIS_URL: p.config.redisUrl,
              VIGIL_KEY_PREFIX: p.config.keyPrefix,
            },
          },
          (err, stdout) => (err ? reject(new Error(err.message)) : resolve(stdout)),
        ),
      );
      expect(cli).toContain(dead[0]!.id);
      expect(cli).toMatch(/1 payloads .*crashed its worker/);
      console.info(
        `poison entry: ${crashes} worker crashes (${POISON_DELIVERIES} on its own), then dead-lettered; ${ids.size - 1} other payloads processed once each`,
      );
    },
  );
});
