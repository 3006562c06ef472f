/**
 * Trims the event outbox. Writers append without trimming and readers (consumer groups: the
 * InfluxDB writer, the notifier) only acknowledge, so no group can miss an entry another group
 * has finished with: entries go only once they are below every group's oldest pending entry (or,
 * with nothing pending, its last-delivered entry). A length cap remains as a last resort, so that a
 * group nobody reads any more (a role switched off for good) cannot fill Redis.
 */
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';

/** Compares two stream ids (`ms-seq`). */
export function compareStreamIds(a: string, b: string): number {
  const [am = 0n, as = 0n] = a.split('-').map(BigInt);
  const [bm = 0n, bs = 0n] = b.split('-').map(BigInt);
  return am === bm ? Number(as - bs) : am < bm ? -1 : 1;
}

/** One row of XINFO GROUPS (name, pending, last-delivered-id, …) as a map of its text fields. */
function toInfo(row: unknown): Map<string, string> {
  const info = new Map<string, string>();
  if (!Array.isArray(row)) return info;
  for (let i = 0; i + 1 < row.length; i += 2) {
    const value: unknown = row[i + 1];
    if (typeof value === 'string' || typeof value === 'number') info.set(String(row[i]), String(value));
  }
  return info;
}

/**
 * The lowest id some group still needs, or undefined when the stream has no group (then nothing is
 * trimmed but by the cap).
 */
export async function oldestNeededId(redis: Redis, stream: string): Promise<string | undefined> {
  const rows = (await redis.xinfo('GROUPS', stream)) as unknown[];
  let oldest: string | undefined;
  for (const info of rows.map(toInfo)) {
    let needed = info.get('last-delivered-id') ?? '0-0';
    if (Number(info.get('pending') ?? 0) > 0) {
      const summary = (await redis.xpending(stream, info.get('name') ?? '')) as [number, string | null];
      if (summary[1]) needed = summary[1];
    }
    if (oldest === undefined || compareStreamIds(needed, oldest) < 0) oldest = needed;
  }
  return oldest;
}

export interface OutboxTrimmer {
  /** Trims now unless it did so less than `everyMs` ago; never throws (failures are logged). */
  maybeTrim(): Promise<void>;
}

export function createOutboxTrimmer(deps: {
  redis: Redis;
  stream: string;
  maxEntries: number;
  log: Logger;
  everyMs?: number;
}): OutboxTrimmer {
  const everyMs = deps.everyMs ?? 1000;
  let lastMs = Number.NEGATIVE_INFINITY;
  return {
    async maybeTrim() {
      if (Date.now() - lastMs < everyMs) return;
      lastMs = Date.now();
      try {
        if ((await deps.redis.exists(deps.stream)) === 0) return;
        const oldest = await oldestNeededId(deps.redis, deps.stream);
        // `~`: whole stream nodes only, cheap; what stays is at most one node more.
        if (oldest !== undefined) await deps.redis.xtrim(deps.stream, 'MINID', '~', oldest);
        const length = await deps.redis.xlen(deps.stream);
        if (length > deps.maxEntries) {
          await deps.redis.xtrim(deps.stream, 'MAXLEN', '~', deps.maxEntries);
          deps.log.error(
            { stream: deps.stream, length, maxEntries: deps.maxEntries },
            'event outbox over VIGIL_EVENT_OUTBOX_MAX_ENTRIES: a reader is far behind or gone; its oldest events were dropped',
          );
        }
      } catch (err) {
        deps.log.warn({ err }, 'event outbox: trim failed');
      }
    },
  };
}
