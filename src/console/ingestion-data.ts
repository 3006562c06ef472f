/**
 * The ingestion log as its console page shows it: one page of the entries that match the filters,
 * newest first, `limit` at a time after a cursor (the entry the page before ended with, as a link
 * carries it), each with its device's display name and the payload it was while the device's recent
 * payloads still hold it. The paging is the ingest log's own (ingest-log.ts: pageAfter, cursorOf),
 * which `vigil ingest log` shares.
 */
import { pageAfter, type IngestLogEntry } from '../ingest/ingest-log.ts';
import { listRecentPayloads } from '../recent-payloads/list-recent-payloads.ts';
import type { RecentPayload } from '../recent-payloads/recent-payload-codec.ts';
import type { ConsoleContext } from './console-context.ts';
import {
  matchesIngest,
  type IngestFilter,
  type IngestPageRequest,
  type ShownEntry,
} from './views/ingestion-view.ts';

/** One page of the log. */
export interface IngestPage {
  entries: ShownEntry[];
  /** How many entries the log holds that match the filters. */
  matching: number;
  /** Position of the page's first entry among them (0: the newest). */
  offset: number;
  /** Cursor of the next, older page; undefined on the last. */
  older: string | undefined;
  /** The cursor's entry has left the log (it keeps the newest VIGIL_INGEST_LOG_SIZE): nothing to show after it. */
  gone: boolean;
}

/** The environment's whole log as kept (at most VIGIL_INGEST_LOG_SIZE entries), shared by its pages. */
export const ingestLogOf = (ctx: ConsoleContext, env: string): Promise<IngestLogEntry[]> =>
  ctx.live.shared(env, 'ingest-log', () => ctx.deps.ingestLog.list(env, ctx.deps.config.ingestLogSize));

export async function readIngestPage(
  ctx: ConsoleContext,
  env: string,
  filter: IngestFilter,
  page: IngestPageRequest,
): Promise<IngestPage> {
  const matching = (await ingestLogOf(ctx, env)).filter((e) => matchesIngest(e, filter));
  const { entries, offset, older, gone } = pageAfter(matching, page.after, page.limit);
  return { entries: await withDevices(ctx, env, entries), matching: matching.length, offset, older, gone };
}

/** The entries with their devices' display names, definitions and payloads (from their recent payloads). */
async function withDevices(
  ctx: ConsoleContext,
  env: string,
  entries: IngestLogEntry[],
): Promise<ShownEntry[]> {
  // The entries' devices only: a page's, not the environment's (which may be 100,000).
  const named = [...new Set(entries.flatMap((e) => (e.deviceName ? [e.deviceName] : [])))];
  const records = await ctx.deps.tenancy.getDevices(env, named);
  const known = new Map(records.flatMap((d) => (d ? [[d.deviceName, d] as const] : [])));
  const devices = [...known.keys()];
  const payloads = new Map<string, RecentPayload>();
  await Promise.all(
    devices.map(async (d) => {
      const list = await ctx.live.shared(env, `payloads\n${d}`, () =>
        listRecentPayloads(ctx.deps.redis, ctx.deps.keys, env, d),
      );
      for (const p of list) payloads.set(`${p.ingestId}\n${d}`, p);
    }),
  );
  return entries.map((entry) => {
    const device = entry.deviceName ? known.get(entry.deviceName) : undefined;
    return {
      entry,
      device: device
        ? {
            displayName: device.displayName,
            definition: { name: device.definitionName, isPublic: device.definitionIsPublic },
          }
        : undefined,
      payload: device ? payloads.get(`${entry.ingestId}\n${device.deviceName}`) : undefined,
    };
  });
}
