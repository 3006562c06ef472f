import type { Command } from 'commander';
import { countEntries, listDeadLetters, requeueDeadLetters } from '../../queue/ingest-queue.ts';
import { leaf, type Runtime } from '../runtime.ts';

/**
 * The ingest queue as operators see it: how much waits, and the entries the workers gave up on
 * (kept in the dead-letter stream after VIGIL_JOB_ATTEMPTS failures) — listed, and put back once
 * the cause is fixed.
 */
export function addQueueCommands(program: Command, rt: Runtime): void {
  const queue = program.command('queue').description('the ingest queue and its dead letters');

  leaf(queue, 'status', 'queue entries waiting or in process, and dead letters').action(
    async (opts: { json?: boolean }) => {
      const { redis, keys, config } = await rt.services();
      const waiting = await countEntries(redis, keys, config.queuePartitions);
      const dead = await listDeadLetters(redis, keys);
      const deadPayloads = dead.reduce((n, d) => n + d.items, 0);
      rt.print(
        opts.json,
        { partitions: config.queuePartitions, entries: waiting, deadLetters: dead.length, deadPayloads },
        [
          `${waiting} entries waiting or in process over ${config.queuePartitions} partitions`,
          `${dead.length} dead letters (${deadPayloads} payloads)`,
        ],
      );
    },
  );

  leaf(queue, 'dead-letters', 'entries that kept failing, oldest first').action(
    async (opts: { json?: boolean }) => {
      const { redis, keys } = await rt.services();
      const dead = await listDeadLetters(redis, keys);
      rt.print(
        opts.json,
        dead,
        dead.map((d) => `${d.id}  partition ${d.partition}  ${d.items} payloads  ${d.reason}`),
      );
      if (dead.length === 0) rt.note(opts.json, 'no dead letters');
    },
  );

  leaf(
    queue,
    'requeue [ids...]',
    'put dead letters back in their partitions (all when no id is given)',
  ).action(async (ids: string[], opts: { json?: boolean }) => {
    const { redis, keys } = await rt.services();
    const moved = await requeueDeadLetters(redis, keys, ids.length > 0 ? ids : undefined);
    rt.print(opts.json, { requeued: moved }, `${moved.length} dead letters requeued`);
  });
}
