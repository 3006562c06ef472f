/**
 * The layout version of Redis data and its migrations (src/state/migrations.ts), with migration
 * lists of the tests' own: run in order and once, under a lock, resumable, waited for by processes
 * starting meanwhile, and never run over a newer layout.
 */
import { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { describe, expect, it, onTestFinished } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { createKeys, type Keys } from '../../src/keys.ts';
import { closeRedis, connectRedis, type Redis } from '../../src/redis/connect.ts';
import {
  migrateData,
  refuseNewerLayout,
  type MigrateOptions,
  type Migration,
} from '../../src/state/migrations.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

function setup() {
  const config = testConfig();
  const connect = () => {
    const redis = connectRedis(config.redisUrl, 'command');
    onTestFinished(() => closeRedis(redis));
    return redis;
  };
  return { redis: connect(), connect, keys: createKeys(config.keyPrefix) };
}

/** A logger whose lines the test can read. */
function recordingLogger() {
  const lines: { msg: string }[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(JSON.parse(chunk.toString()) as { msg: string });
      done();
    },
  });
  return { log: pino({ level: 'info' }, stream), lines };
}

/** Layout 2 of the tests: field `old` of every state hash renamed `new`. */
function renameField(runs: number[]): Migration<Keys> {
  return {
    version: 2,
    description: 'rename old to new',
    async run({ redis, keys }) {
      runs.push(2);
      for (const key of await redis.keys(keys.stateHashes())) {
        const value = await redis.hget(key, 'old');
        if (value !== null) await redis.multi().hset(key, 'new', value).hdel(key, 'old').exec();
      }
    },
  };
}

/**
 * Layout 3 of the tests: each state hash marked `v3`, skipping those marked already (so a second
 * run resumes); the first run fails after `failAfter` hashes.
 */
function markHashes(converted: Map<string, number>, failAfter: number): Migration<Keys> {
  let failed = false;
  return {
    version: 3,
    description: 'mark every state hash',
    async run({ redis, keys }) {
      let done = 0;
      for (const key of (await redis.keys(keys.stateHashes())).sort()) {
        if ((await redis.hget(key, 'v3')) !== null) continue;
        if (!failed && done === failAfter) {
          failed = true;
          throw new Error('half-way failure');
        }
        await redis.hset(key, 'v3', '1');
        converted.set(key, (converted.get(key) ?? 0) + 1);
        done += 1;
      }
    },
  };
}

async function seedHashes(redis: Redis, keys: Keys, n: number): Promise<void> {
  for (let i = 0; i < n; i++) await redis.hset(keys.deviceState('e', `d${i}`), 'old', String(i));
}

const quiet = createLogger('silent');

describe('Redis data layout', () => {
  it('stores layout 1 on an install without a version when no migration is pending', async () => {
    const { redis, keys } = setup();
    await migrateData({ redis, keys, log: quiet, migrations: [] });
    expect(await redis.get(keys.stateLayout())).toBe('1');
    await migrateData({ redis, keys, log: quiet, migrations: [] });
    expect(await redis.get(keys.stateLayout())).toBe('1');
  });

  it('runs the pending migrations in order, each once, from layout 1 when no version is stored', async () => {
    const { redis, keys } = setup();
    await seedHashes(redis, keys, 3);
    const runs: number[] = [];
    const converted = new Map<string, number>();
    const migrations = [renameField(runs), markHashes(converted, Infinity)];
    await migrateData({ redis, keys, log: quiet, migrations });
    expect(await redis.get(keys.stateLayout())).toBe('3');
    expect(await redis.hgetall(keys.deviceState('e', 'd1'))).toEqual({ new: '1', v3: '1' });
    expect([...converted.values()]).toEqual([1, 1, 1]);
    await migrateData({ redis, keys, log: quiet, migrations });
    expect(runs).toEqual([2]);
    expect(await redis.get(keys.migrationLock())).toBeNull();
  });

  it('resumes a migration that failed half-way, keeping the layout reached before it', async () => {
    const { redis, keys } = setup();
    await seedHashes(redis, keys, 10);
    const runs: number[] = [];
    const converted = new Map<string, number>();
    const migrations = [renameField(runs), markHashes(converted, 5)];
    await expect(migrateData({ redis, keys, log: quiet, migrations })).rejects.toThrow('half-way failure');
    expect(await redis.get(keys.stateLayout())).toBe('2');
    expect(converted.size).toBe(5);
    expect(await redis.get(keys.migrationLock())).toBeNull();

    await migrateData({ redis, keys, log: quiet, migrations });
    expect(await redis.get(keys.stateLayout())).toBe('3');
    expect(runs).toEqual([2]);
    expect(converted.size).toBe(10);
    expect([...converted.values()].every((n) => n === 1)).toBe(true);
  });

  it('runs each migration once when two processes start together; the other waits, then starts', async () => {
    const { redis, connect, keys } = setup();
    await seedHashes(redis, keys, 4);
    const runs: number[] = [];
    const converted = new Map<string, number>();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const slow: Migration<Keys> = {
      ...renameField(runs),
      run: async (ctx) => {
        await gate;
        await renameField(runs).run(ctx);
      },
    };
    const migrations = [slow, markHashes(converted, Infinity)];
    const lockMs = 300;
    const a = recordingLogger();
    const b = recordingLogger();
    const options = (r: Redis, log: MigrateOptions<Keys>['log']): MigrateOptions<Keys> => ({
      redis: r,
      keys,
      log,
      migrations,
      lockMs,
      pollMs: 20,
    });
    const started = Date.now();
    const both = Promise.all([
      migrateData(options(connect(), a.log)),
      migrateData(options(connect(), b.log)),
    ]);
    const waiting = (l: { msg: string }) => l.msg.startsWith('another process is migrating');
    await eventually(() => Promise.resolve([...a.lines, ...b.lines].some(waiting) ? true : undefined), {
      timeoutMs: 10_000,
      message: 'one process waiting',
    });
    // Held well past its lifetime without renewal, the lock still keeps the other one out.
    while (Date.now() - started < 4 * lockMs) {
      expect(await redis.get(keys.stateLayout())).toBeNull();
      await sleep(lockMs / 4);
    }
    expect(await redis.get(keys.migrationLock())).not.toBeNull();
    open();
    await both;
    expect(runs).toEqual([2]);
    expect([...converted.values()]).toEqual([1, 1, 1, 1]);
    expect(await redis.get(keys.stateLayout())).toBe('3');
    const waiter = a.lines.some(waiting) ? a : b;
    expect(waiter.lines.map((l) => l.msg)).toContain('Redis data migrated by another process; starting');
  });

  it('takes over from a process that died holding the lock', async () => {
    const { redis, keys } = setup();
    await seedHashes(redis, keys, 1);
    await redis.set(keys.migrationLock(), 'a process that died', 'PX', 300);
    const runs: number[] = [];
    await migrateData({ redis, keys, log: quiet, migrations: [renameField(runs)], pollMs: 20 });
    expect(runs).toEqual([2]);
    expect(await redis.get(keys.stateLayout())).toBe('2');
  });

  it('gives up waiting for another process after its bound, saying what it waited for', async () => {
    const { redis, keys } = setup();
    await redis.set(keys.migrationLock(), 'a slow process', 'PX', 30_000);
    const runs: number[] = [];
    await expect(
      migrateData({ redis, keys, log: quiet, migrations: [renameField(runs)], waitMs: 200, pollMs: 20 }),
    ).rejects.toThrow(/waiting for another process to migrate the Redis data from layout 1 to 2/);
    expect(runs).toEqual([]);
    expect(await redis.get(keys.stateLayout())).toBeNull();
  });

  it('refuses a stored layout newer than the code knows, and leaves everything as it is', async () => {
    const { redis, keys } = setup();
    await redis.set(keys.stateLayout(), '3');
    const runs: number[] = [];
    const refused = migrateData({ redis, keys, log: quiet, migrations: [renameField(runs)] });
    await expect(refused).rejects.toMatchObject({ code: 'STATE_LAYOUT_UNKNOWN' });
    await expect(refuseNewerLayout(redis, keys, 2)).rejects.toMatchObject({ code: 'STATE_LAYOUT_UNKNOWN' });
    await refuseNewerLayout(redis, keys, 3);
    expect(runs).toEqual([]);
    expect(await redis.get(keys.stateLayout())).toBe('3');
    expect(await redis.get(keys.migrationLock())).toBeNull();
  });

  it('refuses a list whose versions do not follow each other', async () => {
    const { redis, keys } = setup();
    const skip = { ...renameField([]), version: 3 };
    await expect(migrateData({ redis, keys, log: quiet, migrations: [skip] })).rejects.toThrow(
      /has version 3; expected 2/,
    );
  });
});
