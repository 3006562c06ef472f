/**
 * Event listings of the read API (endpoints 8 and 9): newest first from the environment's or the
 * device's sorted set (score = receivedMs, member = EventRecord JSON), optionally within
 * [startMs, endMs) and filtered by category, status and a set of devices (the devices a labels
 * filter matches). Filters are applied while paging, so `limit` counts matching events.
 */
import type { EventRecord } from '../domain/types.ts';
import type { Redis } from '../redis/connect.ts';
import type { EventKeys } from './event-keys.ts';

export interface EventQuery {
  env: string;
  /** Only this device's events; absent = the whole environment. */
  device?: string | undefined;
  /** Most events returned. */
  limit: number;
  /** Inclusive lower bound on receivedMs. */
  startMs?: number | undefined;
  /** Exclusive upper bound on receivedMs. */
  endMs?: number | undefined;
  eventCategory?: string | undefined;
  eventStatus?: string | undefined;
  /** Only events of these devices (those with the labels asked for); absent = every device. */
  devices?: ReadonlySet<string> | undefined;
}

/** An event as served: the stored record without id/env/receivedMs/ns, plus receivedUTC. */
export type ServedEvent = Omit<EventRecord, 'id' | 'env' | 'receivedMs' | 'ns'> & { receivedUTC: string };

/** Members read per Redis call while filtering (without filters one call reads `limit`). */
const PAGE_SIZE = 1000;

export async function listEvents(redis: Redis, keys: EventKeys, q: EventQuery): Promise<ServedEvent[]> {
  if (q.limit <= 0 || q.devices?.size === 0) return [];
  const key = q.device === undefined ? keys.envEvents(q.env) : keys.deviceEvents(q.env, q.device);
  const max = q.endMs === undefined ? '+inf' : `(${q.endMs}`;
  const min = q.startMs === undefined ? '-inf' : String(q.startMs);
  const filtered = q.eventCategory !== undefined || q.eventStatus !== undefined || q.devices !== undefined;
  const pageSize = filtered ? Math.max(PAGE_SIZE, q.limit) : q.limit;
  const out: ServedEvent[] = [];
  for (let offset = 0; out.length < q.limit; offset += pageSize) {
    const members = await redis.zrevrangebyscore(key, max, min, 'LIMIT', offset, pageSize);
    for (const m of members) {
      const e = JSON.parse(m) as EventRecord;
      if (q.eventCategory !== undefined && e.eventCategory !== q.eventCategory) continue;
      if (q.eventStatus !== undefined && e.eventStatus !== q.eventStatus) continue;
      if (q.devices !== undefined && !q.devices.has(e.deviceName)) continue;
      out.push(serveEvent(e));
      if (out.length === q.limit) break;
    }
    if (members.length < pageSize) break;
  }
  return out;
}

export function serveEvent(e: EventRecord): ServedEvent {
  const { id: _id, env: _env, receivedMs, ns: _ns, ...rest } = e;
  return { ...rest, receivedUTC: new Date(receivedMs).toISOString() };
}
