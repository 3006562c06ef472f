import type { Command } from 'commander';
import { AppError } from '../../errors/app-error.ts';
import { createIngestLog, pageAfter, type IngestLogEntry } from '../../ingest/ingest-log.ts';
import { leaf, parse, withEnv, type Runtime } from '../runtime.ts';

const DEFAULT_LIMIT = 50;

export function addIngestCommands(program: Command, rt: Runtime): void {
  const ingest = program.command('ingest').description('what happened to submitted payloads');

  withEnv(leaf(ingest, 'log', 'ingestion outcomes, newest first'))
    .option('--limit <n>', 'how many (at most the log size)', parse.positiveInt, DEFAULT_LIMIT)
    .option('--after <cursor>', 'the page after the entry this cursor names (printed with the page before)')
    .action(async (opts: { env: string; json?: boolean; limit: number; after?: string }) => {
      // The whole log as kept (over the read API in the remote mode), paged as the console pages
      // it: a cursor names an entry, so entries that arrive between two pages do not shift the
      // older ones.
      const all = await rt.read<IngestLogEntry[]>(opts.env, '/ingest/log', {}, async () => {
        const { admin, redis, keys, config } = await rt.services();
        await admin.requireEnv(opts.env);
        const size = config.ingestLogSize;
        return createIngestLog({ redis, keys, size }).list(opts.env, size);
      });
      const page = pageAfter(all, opts.after, opts.limit);
      if (page.gone) {
        throw new AppError(
          'INVALID_INPUT',
          `no entry ${opts.after} in the ingestion log of ${opts.env}: it keeps the newest ${all.length}, and that entry may have left it`,
        );
      }
      const { entries, older } = page;
      rt.print(
        opts.json,
        { entries, next: older ?? null },
        entries.map((e) =>
          [e.receivedUTC, e.outcome.padEnd(8), e.gateway, e.deviceName ?? '-', e.code ?? '', e.message ?? '']
            .filter((part) => part !== '')
            .join('  '),
        ),
      );
      if (older !== undefined) {
        const limit = opts.limit === DEFAULT_LIMIT ? '' : ` --limit ${opts.limit}`;
        rt.note(opts.json, `older: vigil ingest log --env ${opts.env}${limit} --after ${shellWord(older)}`);
      } else if (entries.length === 0 && opts.after === undefined) {
        rt.note(opts.json, `no ingestion outcomes recorded for ${opts.env} yet`);
      }
    });
}

/** `s` as one shell word: a cursor holds a device name, which may hold spaces or quotes. */
const shellWord = (s: string): string => (/^[\w./:-]+$/.test(s) ? s : `'${s.replaceAll("'", `'\\''`)}'`);
