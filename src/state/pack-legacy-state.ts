/**
 * Upgrade of the device state hashes written before the packed layout (one text field per value of
 * a data point; see pack-legacy-state.lua): every process runs it at start, before its roles. Once
 * done, `StateKeys.stateLayout` says so and a start costs one GET. Several processes starting together
 * may each convert: the conversion is atomic per hash and idempotent. Workers of the older version
 * must be stopped first — they would keep writing the text layout.
 */
import { readFileSync } from 'node:fs';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { StateKeys } from './state-keys.ts';
import { POINT_LAYOUT } from './point-record.ts';

const packLua = readFileSync(new URL('./lua/pack-legacy-state.lua', import.meta.url), 'utf8');

type PackRedis = Redis & { vigilPackLegacyState(key: string): Promise<number> };

/** Converts every state hash still in the text layout; returns the data points converted. */
export async function packLegacyState(deps: { redis: Redis; keys: StateKeys; log: Logger }): Promise<number> {
  const { keys, log } = deps;
  const redis = deps.redis as PackRedis;
  if ((await redis.get(keys.stateLayout())) === String(POINT_LAYOUT)) return 0;
  if (typeof redis.vigilPackLegacyState !== 'function') {
    redis.defineCommand('vigilPackLegacyState', { numberOfKeys: 1, lua: packLua });
  }
  let converted = 0;
  let hashes = 0;
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', keys.stateHashes(), 'COUNT', 1000);
    cursor = next;
    const pipe = redis.pipeline() as unknown as PackRedis & {
      exec(): Promise<[Error | null, unknown][] | null>;
    };
    for (const key of batch) void pipe.vigilPackLegacyState(key);
    for (const [err, n] of (await pipe.exec()) ?? []) {
      if (err) throw err;
      converted += Number(n);
    }
    hashes += batch.length;
  } while (cursor !== '0');
  await redis.set(keys.stateLayout(), String(POINT_LAYOUT));
  if (converted > 0) log.info({ hashes, converted }, 'device state converted to the packed layout');
  return converted;
}
