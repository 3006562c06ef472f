import type { Command } from 'commander';
import { readEntry } from '../../ingest/ingest-log.ts';
import { leaf, parse, withEnv, type Runtime } from '../runtime.ts';

export function addIngestCommands(program: Command, rt: Runtime): void {
  const ingest = program.command('ingest').description('what happened to submitted payloads');

  withEnv(leaf(ingest, 'log', 'ingestion outcomes, newest first'))
    .option('--limit <n>', 'how many (at most the log size)', parse.positiveInt, 50)
    .action(async (opts: { env: string; json?: boolean; limit: number }) => {
      const { admin, redis, keys } = await rt.services();
      await admin.requireEnv(opts.env);
      const raw = await redis.lrange(keys.ingestLog(opts.env), 0, opts.limit - 1);
      const entries = raw.map(readEntry);
      rt.print(
        opts.json,
        entries,
        entries.map((e) =>
          [e.receivedUTC, e.outcome.padEnd(8), e.gateway, e.deviceName ?? '-', e.code ?? '', e.message ?? '']
            .filter((part) => part !== '')
            .join('  '),
        ),
      );
      if (entries.length === 0) rt.note(opts.json, `no ingestion outcomes recorded for ${opts.env} yet`);
    });
}
