/** Reading a device's recent payloads, for the console. */
import type { Redis } from '../redis/connect.ts';
import { readRecentPayload, type RecentPayload } from './recent-payload-codec.ts';
import type { RecentPayloadKeys } from './recent-payload-keys.ts';

/**
 * A device's recent payloads, newest first, at most `limit` (default 256). Entries in a form this
 * version does not write are left out.
 */
export async function listRecentPayloads(
  redis: Redis,
  keys: RecentPayloadKeys,
  env: string,
  device: string,
  limit = 256,
): Promise<RecentPayload[]> {
  const texts = await redis.lrange(keys.recentPayloads(env, device), 0, limit - 1);
  // A write whose reply a dropped connection lost is written again: its entries show once.
  const seen = new Set<string>();
  const out: RecentPayload[] = [];
  for (const text of texts) {
    const p = readRecentPayload(text);
    if (p && !seen.has(p.ingestId)) {
      seen.add(p.ingestId);
      out.push(p);
    }
  }
  return out;
}
