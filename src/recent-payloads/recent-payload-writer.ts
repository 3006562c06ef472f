/**
 * Each device's recent payloads, for the console (a device's page, the parser workbench's replay):
 * what the device's parser received, with the outcome of its submission and the status each data
 * point got from it. A Redis LIST per device, newest first, bounded in count
 * (VIGIL_DEVICE_RECENT_PAYLOADS) and in bytes (recent-payload-codec.ts).
 *
 * They are a copy for people to look at, not data: the worker keeps the entries of its
 * acknowledged steps in memory, the newest `count` per device, and writes them every
 * RECENT_PAYLOADS_FLUSH_MS with a capped-list writer — one LPUSH and one LTRIM per device and
 * write, however many steps and payloads it gathered. Kept only after the acknowledgement, a
 * payload processed again (its step was not acknowledged) is kept once; a write that failed is
 * tried again with the next one, and one whose reply a dropped connection lost may be there twice,
 * which reading leaves out. A worker killed loses the entries of its last second (the payloads
 * themselves are processed, in state and history). Written by the acknowledging script, every
 * payload's copy would cost the worker and Redis in the step's critical path; gathered, a device
 * sending several payloads a second costs a command pair per write. Every second rather than more
 * often: per device and write, Redis spends about what it spends per entry.
 */
import { readFileSync } from 'node:fs';
import { sampledWarning, type Logger } from '../log/logger.ts';
import { startCappedListWriter, type GatheredLists } from '../redis/capped-list-writer.ts';
import type { Redis } from '../redis/connect.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { RecentPayloadKeys } from './recent-payload-keys.ts';

const KEEP_LUA = readFileSync(new URL('./lua/keep-recent-payloads.lua', import.meta.url), 'utf8');

/** How often a worker writes the recent payloads it gathered, in ms (the console's delay). */
export const RECENT_PAYLOADS_FLUSH_MS = 1000;
/** Entries (UTF-16 units) written by one script call at most: each call holds Redis for its time. */
const WRITE_MAX_UNITS = 1024 * 1024;

/** Entries to keep of one device: oldest first, at most `count`. */
export interface KeptDevice {
  env: string;
  device: string;
  texts: string[];
}

/** Entries to keep, by the list key of their device. */
export type KeptPayloads = Map<string, KeptDevice>;

/** Gathers the recent payloads of a worker's acknowledged steps and writes them (module comment). */
export interface RecentPayloadWriter {
  /** Keeps the entries of a step whose acknowledgement landed. */
  add(kept: KeptPayloads): void;
  /** Writes what was gathered until now (after the write under way, if there is one). */
  flush(): Promise<void>;
  /** Stops the timer and writes what is left; safe to call twice. */
  close(): Promise<void>;
}

type KeepRedis = Redis & {
  vigilKeepRecent(numberOfKeys: number, ...args: (string | number)[]): Promise<number>;
};

type WriterKeys = RecentPayloadKeys & Pick<TenancyKeys, 'devices'>;

export function startRecentPayloadWriter(o: {
  redis: Redis;
  keys: WriterKeys;
  count: number;
  log: Logger;
  /** Default RECENT_PAYLOADS_FLUSH_MS. */
  flushMs?: number;
  /** Gathered entries (UTF-16 units) written at once, and kept after a failed write; default 8 Mi. */
  maxGatheredUnits?: number;
}): RecentPayloadWriter {
  const redis = o.redis as KeepRedis;
  if (typeof redis.vigilKeepRecent !== 'function') redis.defineCommand('vigilKeepRecent', { lua: KEEP_LUA });
  const notList = sampledWarning(
    o.log,
    "a device's recent payloads key holds no list: its payloads are not kept",
  );
  const lists = startCappedListWriter<KeptDevice>({
    redis,
    cap: o.count,
    delayMs: o.flushMs ?? RECENT_PAYLOADS_FLUSH_MS,
    log: o.log,
    what: 'recent payloads',
    // While Redis is down no step is acknowledged, so little comes meanwhile.
    retryFailed: true,
    ...(o.maxGatheredUnits === undefined ? {} : { maxHeldUnits: o.maxGatheredUnits }),
    write: async (gathered) => {
      const refused = await keepRecent(redis, o.keys, o.count, gathered);
      if (refused > 0) notList({ devices: refused });
    },
  });
  return {
    add(kept) {
      for (const [key, device] of kept) lists.add(key, device.texts, device);
    },
    flush: () => lists.flush(),
    close: () => lists.close(),
  };
}

/**
 * Writes `gathered` with keep-recent-payloads.lua, by environment, in calls of at most
 * WRITE_MAX_UNITS: answers how many of its keys were not lists.
 */
async function keepRecent(
  redis: KeepRedis,
  keys: WriterKeys,
  count: number,
  gathered: GatheredLists<KeptDevice>,
): Promise<number> {
  const byEnv = new Map<string, [string, KeptDevice, string[]][]>();
  for (const [key, { meta, entries }] of gathered) {
    const list = byEnv.get(meta.env);
    if (list) list.push([key, meta, entries]);
    else byEnv.set(meta.env, [[key, meta, entries]]);
  }
  let refused = 0;
  let args: (string | number)[] = [count];
  let size = 0;
  const call = async () => {
    refused += await redis.vigilKeepRecent(0, ...args);
    args = [count];
    size = 0;
  };
  for (const [env, devices] of byEnv) {
    let group: (string | number)[] = [];
    let m = 0;
    const endGroup = () => {
      if (m > 0) args.push(keys.recentPayloadsWritten(env), keys.devices(env), m, ...group);
      group = [];
      m = 0;
    };
    for (const [key, { device }, texts] of devices) {
      group.push(device, key, texts.length, ...texts);
      m += 1;
      for (const t of texts) size += t.length;
      if (size >= WRITE_MAX_UNITS) {
        endGroup();
        await call();
      }
    }
    endGroup();
  }
  if (args.length > 1) await call();
  return refused;
}
