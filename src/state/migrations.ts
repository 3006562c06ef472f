/**
 * Versions of the data Vigil keeps in Redis, and the migrations between them. The version is stored
 * at `StateKeys.stateLayout`; every process brings it up to the newest one its code knows before any
 * of its roles starts (main.ts), so no role ever reads or writes data of another layout.
 *
 * - An absent version means layout 1 (BASE_LAYOUT), the only layout of every deployment before the
 *   version was stored — and of a fresh install, whose migrations then run over no data.
 * - Migrations run one process at a time, under a lock (`StateKeys.migrationLock`, renewed while
 *   they run); the version is written after each. Processes starting meanwhile wait, bounded, for
 *   the version to be reached. A migration must be resumable: one that stopped half-way (a crash, a
 *   lost lock) runs again from its start, over data partly migrated already.
 * - A stored version newer than the code knows stops the process (STATE_LAYOUT_UNKNOWN): an older
 *   Vigil must never write into a newer layout during a rolling upgrade.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError } from '../errors/app-error.ts';
import { startPeriodic } from '../lib/periodic.ts';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { StateKeys } from './state-keys.ts';

/** The layout of data stored before the version was: what an absent version stands for. */
export const BASE_LAYOUT = 1;

export interface MigrationContext<K> {
  redis: Redis;
  keys: K;
  log: Logger;
  /**
   * Aborted when this process no longer holds the migration lock (another one may have taken
   * over): a long migration checks it between batches (`signal.throwIfAborted()`).
   */
  signal: AbortSignal;
}

export interface Migration<K> {
  /** The layout it produces: the previous migration's version + 1 (the first one's: 2). */
  version: number;
  /** One line for the log: what changes. */
  description: string;
  /** Migrates every piece of data still in the previous layout; safe to run again after a stop. */
  run(ctx: MigrationContext<K>): Promise<void>;
}

/** The layout `migrations` lead to: the layout this code reads and writes. */
export const latestLayout = (migrations: readonly Migration<unknown>[]): number =>
  migrations.at(-1)?.version ?? BASE_LAYOUT;

export interface MigrateOptions<K> {
  redis: Redis;
  keys: K;
  log: Logger;
  migrations: readonly Migration<K>[];
  /** Lifetime of the lock without renewal, in ms (renewed every third of it). Default 30 s. */
  lockMs?: number;
  /** Longest wait for another process's migrations, in ms. Default 10 minutes. */
  waitMs?: number;
  /** Interval between looks at the version while waiting, in ms. Default 250. */
  pollMs?: number;
}

/**
 * Brings the stored layout up to `latestLayout(migrations)`: runs the pending migrations under the
 * lock, or waits for the process that holds it. Rejects with STATE_LAYOUT_UNKNOWN when the stored
 * layout is newer than the code knows, and with the migration's own error when one fails (the
 * version stays at the last one reached, and the next start resumes).
 */
export async function migrateData<K extends StateKeys>(opts: MigrateOptions<K>): Promise<void> {
  const { redis, keys, log, migrations } = opts;
  checkSequence(migrations);
  const latest = latestLayout(migrations);
  const lockMs = opts.lockMs ?? 30_000;
  const waitMs = opts.waitMs ?? 600_000;
  const until = Date.now() + waitMs;
  let waiting = false;
  for (;;) {
    const stored = await readStoredLayout(redis, keys);
    const layout = stored ?? BASE_LAYOUT;
    refuseNewer(layout, latest);
    if (layout === latest) {
      // NX: a newer Vigil may have written its version since the read; the next pass sees it.
      if (stored === null && (await redis.set(keys.stateLayout(), String(latest), 'NX')) === null) continue;
      if (waiting) log.info({ layout }, 'Redis data migrated by another process; starting');
      return;
    }
    const token = randomBytes(16).toString('hex');
    if ((await redis.set(keys.migrationLock(), token, 'PX', lockMs, 'NX')) !== null) {
      await runUnderLock(opts, token, lockMs);
      continue;
    }
    if (!waiting) {
      log.warn(
        { from: layout, to: latest, lock: keys.migrationLock() },
        'another process is migrating the Redis data; waiting for it before starting',
      );
      waiting = true;
    }
    if (Date.now() >= until) {
      throw new Error(
        `gave up after ${Math.round(waitMs / 1000)} s waiting for another process to migrate the Redis data from layout ${layout} to ${latest} (lock ${keys.migrationLock()} still held); its log says why`,
      );
    }
    await sleep(opts.pollMs ?? 250);
  }
}

/**
 * Refuses (STATE_LAYOUT_UNKNOWN) when Redis holds a layout newer than `latest`: for processes that
 * write without migrating, such as the `vigil` command.
 */
export async function refuseNewerLayout(redis: Redis, keys: StateKeys, latest: number): Promise<void> {
  refuseNewer((await readStoredLayout(redis, keys)) ?? BASE_LAYOUT, latest);
}

function refuseNewer(stored: number, latest: number): void {
  if (stored <= latest) return;
  throw new AppError(
    'STATE_LAYOUT_UNKNOWN',
    `Redis holds Vigil data in layout ${stored}, newer than this version of Vigil knows (up to ${latest}); it refuses to run rather than write into a newer layout: use a version that knows layout ${stored}`,
  );
}

/** The stored layout version; null when none is stored. */
async function readStoredLayout(redis: Redis, keys: StateKeys): Promise<number | null> {
  const text = await redis.get(keys.stateLayout());
  if (text === null) return null;
  const layout = Number(text);
  if (!Number.isSafeInteger(layout) || layout < BASE_LAYOUT) {
    throw new Error(`${keys.stateLayout()} holds "${text}", which is not a layout version`);
  }
  return layout;
}

/** Extends the lock if this process still holds it (token): 1, else 0. */
const RENEW_LOCK = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0`;
/** Writes the version if this process still holds the lock: 1, else 0. */
const WRITE_VERSION = `if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
return 1`;
const RELEASE_LOCK = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`;

/** Runs the migrations past the stored version, holding the lock (renewed) until done or failed. */
async function runUnderLock<K extends StateKeys>(
  opts: MigrateOptions<K>,
  token: string,
  lockMs: number,
): Promise<void> {
  const { redis, keys, log, migrations } = opts;
  const lockKey = keys.migrationLock();
  const lost = new AbortController();
  // Every third of the lock's lifetime from the previous renewal's start, as the lock's margin
  // assumes. One renewal at a time: a second sent while the first waits would wait behind it on the
  // same connection, and renew nothing sooner.
  const renewal = startPeriodic({
    intervalMs: lockMs / 3,
    fixedRate: true,
    run: async () => {
      const held = await redis.eval(RENEW_LOCK, 1, lockKey, token, lockMs);
      if (held !== 1) lost.abort(new Error(`lost the migration lock ${lockKey}`));
    },
    // Redis unreachable for a moment: the next renewal tries again, and the version is only
    // written while the lock is still this process's.
    onError: (err) => log.warn({ err }, 'could not renew the migration lock'),
  });
  try {
    // Read again under the lock: the previous holder may have finished in between.
    let layout = (await readStoredLayout(redis, keys)) ?? BASE_LAYOUT;
    refuseNewer(layout, latestLayout(migrations));
    for (const migration of migrations) {
      if (migration.version <= layout) continue;
      lost.signal.throwIfAborted();
      log.info({ from: layout, to: migration.version }, `migrating the Redis data: ${migration.description}`);
      const startedMs = Date.now();
      await migration.run({ redis, keys, log, signal: lost.signal });
      const written = await redis.eval(
        WRITE_VERSION,
        2,
        lockKey,
        keys.stateLayout(),
        token,
        migration.version,
      );
      if (written !== 1)
        throw new Error(`lost the migration lock ${lockKey} before layout ${migration.version} was written`);
      log.info({ layout: migration.version, ms: Date.now() - startedMs }, 'Redis data migrated');
      layout = migration.version;
    }
  } finally {
    // A renewal in progress ends before the lock is released, not after.
    await renewal.close();
    try {
      await redis.eval(RELEASE_LOCK, 1, lockKey, token);
    } catch (err) {
      // It expires by itself within lockMs.
      log.warn({ err }, 'could not release the migration lock');
    }
  }
}

/** Versions must follow each other from BASE_LAYOUT + 1: a gap or a repeat is a mistake in the list. */
function checkSequence(migrations: readonly Migration<unknown>[]): void {
  migrations.forEach((m, i) => {
    if (m.version !== BASE_LAYOUT + 1 + i) {
      throw new Error(
        `migration "${m.description}" has version ${m.version}; expected ${BASE_LAYOUT + 1 + i}`,
      );
    }
  });
}
