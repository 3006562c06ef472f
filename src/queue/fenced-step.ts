/**
 * The once-only effects of a worker's processing step, each run by one Redis script that first
 * checks the step's leases (partition-leases.ts `Fence`): taking entries (crash counts), giving a
 * take back after a failure the worker saw, and finishing — the commands that must land once (the
 * ingestion log, dead letters) with the acknowledgement and deletion of the entries. A step whose
 * lease changed hands writes nothing: LeaseLostError.
 */
import { readFileSync } from 'node:fs';
import { LeaseLostError } from '../errors/lease-lost.ts';
import type { Redis } from '../redis/connect.ts';
import type { RedisCommand } from '../redis/command.ts';
import { entryFields, INGEST_GROUP, type QueueEntry } from './ingest-queue.ts';
import type { Fence } from './partition-leases.ts';
import type { QueueKeys } from './queue-keys.ts';
import type { IngestItem } from '../domain/ingest-item.ts';

const FINISH_STEP = readFileSync(new URL('./lua/fenced-step.lua', import.meta.url), 'utf8');
const TAKE_ENTRIES = readFileSync(new URL('./lua/take-entries.lua', import.meta.url), 'utf8');

type ScriptRedis = Redis & {
  vigilFinishStep(numberOfKeys: number, ...args: (string | number)[]): Promise<number>;
  vigilTakeEntries(numberOfKeys: number, ...args: (string | number)[]): Promise<[number[], number] | number>;
};

/** The connection with the scripts defined (sent by hash after the first call). */
function scripts(redis: Redis): ScriptRedis {
  const r = redis as ScriptRedis;
  if (typeof r.vigilFinishStep !== 'function') {
    redis.defineCommand('vigilFinishStep', { lua: FINISH_STEP });
    redis.defineCommand('vigilTakeEntries', { lua: TAKE_ENTRIES });
  }
  return r;
}

/** An entry as far as finishing it needs: where it is, and what it counts for in the backlog. */
export type EntryRef = Pick<QueueEntry, 'partition' | 'id' | 'payloadsByEnv'>;

const fenceArgs = (fence: Fence): (string | number)[] => [
  fence.leaseKeys.length,
  ...fence.leaseKeys,
  ...fence.values,
];

/** Answered for the first suspect among entries taken as a batch, which then takes nothing. */
export const SUSPECT = -2;

/** What taking entries answered (take-entries.lua). */
export interface Takes {
  /** Per entry: how many steps have taken it without finishing, this one included; 0: not taken. */
  counts: number[];
  /** For an entry taken alone among suspects: the crashes counted to it alone, this take included. */
  alone: number;
}

/**
 * Records that a step takes `entries` (in queue order per partition). As a `batch`: every entry,
 * counted 1 each — or, when they hold a suspect (an entry taken before by a step that never
 * finished), nothing, the suspect answering SUSPECT. As `suspects`: a group of suspects to retry
 * together, halved each time it crashes again, down to one (take-entries.lua).
 */
export async function takeEntries(
  redis: Redis,
  keys: QueueKeys,
  fence: Fence,
  entries: readonly Pick<QueueEntry, 'partition' | 'id'>[],
  mode: 'batch' | 'suspects',
): Promise<Takes> {
  return changeTakes(redis, keys, fence, entries, 1, mode);
}

/**
 * Gives the takes of `entries` back after a step failed and this worker saw it (an InfluxDB
 * outage, say): such failures are retried and counted by the worker, not as crashes.
 */
export async function releaseEntries(
  redis: Redis,
  keys: QueueKeys,
  fence: Fence,
  entries: readonly Pick<QueueEntry, 'partition' | 'id'>[],
  alone: boolean,
): Promise<void> {
  await changeTakes(redis, keys, fence, entries, -1, alone ? 'alone' : 'batch');
}

async function changeTakes(
  redis: Redis,
  keys: QueueKeys,
  fence: Fence,
  entries: readonly Pick<QueueEntry, 'partition' | 'id'>[],
  delta: 1 | -1,
  mode: 'batch' | 'suspects' | 'alone',
): Promise<Takes> {
  if (entries.length === 0) return { counts: [], alone: 0 };
  const args: (string | number)[] = [...fenceArgs(fence), entries.length];
  for (const e of entries) args.push(keys.takenCounts(e.partition), e.id);
  args.push(delta, mode);
  const reply = await scripts(redis).vigilTakeEntries(0, ...args);
  if (!Array.isArray(reply)) throw new LeaseLostError();
  const [counts, alone] = reply;
  return { counts, alone };
}

/**
 * Runs `commands`, then acknowledges and deletes `entries` (taking their payloads off the backlog
 * counts and their crash counts away), all in one script and only under `fence`.
 */
export async function finishStep(
  redis: Redis,
  keys: QueueKeys,
  fence: Fence,
  entries: readonly EntryRef[],
  commands: readonly RedisCommand[] = [],
): Promise<void> {
  const args: (string | number)[] = [...fenceArgs(fence), commands.length];
  for (const command of commands) args.push(command.length, ...command);
  args.push(entries.length);
  for (const e of entries) {
    args.push(keys.takenCounts(e.partition), keys.ingestStream(e.partition), e.id, e.payloadsByEnv.size);
    for (const [env, n] of e.payloadsByEnv) args.push(env, n);
  }
  args.push(INGEST_GROUP);
  const done = await scripts(redis).vigilFinishStep(1, keys.queueBacklog(), ...args);
  if (done !== 1) throw new LeaseLostError();
}

/** The command that adds a dead letter holding `items` of `entry`, with the reason. */
export function deadLetterCommand(
  keys: QueueKeys,
  entry: Pick<QueueEntry, 'partition' | 'id'>,
  items: readonly IngestItem[],
  reason: string,
): RedisCommand {
  return [
    'XADD',
    keys.deadLetters(),
    '*',
    'partition',
    String(entry.partition),
    'entry',
    entry.id,
    'reason',
    reason.slice(0, 2000),
    ...entryFields(items),
  ];
}
