/**
 * The gathered capped-list writer (the worker's recent payloads, the notifier's delivery log):
 * entries gathered per list and written a moment later, each list newest first and capped, a failed
 * write kept for the next one or given up, and stopping writes what is left.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { startCappedListWriter, type GatheredLists } from '../../src/redis/capped-list-writer.ts';
import { closeRedis, connectRedis, type Redis } from '../../src/redis/connect.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

interface SetUp {
  cap?: number;
  delayMs?: number;
  retryFailed?: boolean;
  maxHeldUnits?: number;
  write?: (lists: GatheredLists<string>) => Promise<void>;
}

function setUp(o: SetUp = {}) {
  const config = testConfig();
  const redis = connectRedis(config.redisUrl, 'command', 'capped-list-writer-test');
  onTestFinished(() => closeRedis(redis));
  const writer = startCappedListWriter<string>({
    redis,
    cap: o.cap ?? 3,
    // Without `delayMs`, no timer write within a test: each writes with flush() or close().
    delayMs: o.delayMs ?? 3_600_000,
    log: createLogger('silent'),
    what: 'test lists',
    retryFailed: o.retryFailed ?? true,
    ...(o.maxHeldUnits === undefined ? {} : { maxHeldUnits: o.maxHeldUnits }),
    ...(o.write ? { write: o.write } : {}),
  });
  onTestFinished(() => writer.close());
  const key = (name: string) => `${config.keyPrefix}:${name}`;
  const list = (name: string) => redis.lrange(key(name), 0, -1);
  return { redis, writer, key, list };
}

/** Drops `redis`'s connection and waits until it is closed, so that the next write fails. */
async function dropConnection(redis: Redis): Promise<void> {
  redis.disconnect();
  await eventually(() => redis.status === 'end', { message: 'the connection closed' });
}

describe('capped list writer', () => {
  it('writes what several adds gathered at once per list, newest first, the newest `cap`', async () => {
    const { redis, writer, key, list } = setUp();
    writer.add(key('a'), ['a1', 'a2'], 'meta');
    writer.add(key('a'), ['a3', 'a4'], 'meta');
    writer.add(key('b'), ['b1'], 'meta');
    expect(await redis.exists(key('a'), key('b'))).toBe(0);
    await writer.flush();
    expect(await list('a')).toEqual(['a4', 'a3', 'a2']);
    expect(await list('b')).toEqual(['b1']);
    writer.add(key('a'), ['a5'], 'meta');
    await writer.flush();
    expect(await list('a')).toEqual(['a5', 'a4', 'a3']);
  });

  it('writes within `delayMs` of an entry, without a flush', async () => {
    const { writer, key, list } = setUp({ delayMs: 20 });
    writer.add(key('a'), ['a1'], 'meta');
    await eventually(() => list('a'), { until: (l) => l.length === 1, message: 'the timer wrote a1' });
    writer.add(key('a'), ['a2'], 'meta');
    expect(
      await eventually(() => list('a'), { until: (l) => l.length === 2, message: 'a2 written' }),
    ).toEqual(['a2', 'a1']);
  });

  it('hands the lists with what was added beside them to a write of its own', async () => {
    const seen: [string, string, string[]][] = [];
    const { writer } = setUp({
      write: (lists) => {
        for (const [key, { meta, entries }] of lists) seen.push([key, meta, [...entries]]);
        return Promise.resolve();
      },
    });
    writer.add('k1', ['1', '2'], 'first');
    writer.add('k1', ['3', '4'], 'first');
    writer.add('k2', ['x'], 'second');
    await writer.flush();
    expect(seen).toEqual([
      ['k1', 'first', ['2', '3', '4']],
      ['k2', 'second', ['x']],
    ]);
  });

  it('stops with what was gathered written, once however often it is closed', async () => {
    const { writer, key, list } = setUp();
    writer.add(key('a'), ['a1', 'a2'], 'meta');
    const closing = writer.close();
    expect(writer.close()).toBe(closing);
    await Promise.all([closing, writer.close()]);
    expect(await list('a')).toEqual(['a2', 'a1']);
  });

  it('keeps what a failed write had and writes it with the next one, in order', async () => {
    const { redis, writer, key, list } = setUp();
    writer.add(key('a'), ['a1', 'a2'], 'meta');
    await dropConnection(redis);
    await writer.flush();
    await redis.connect();
    writer.add(key('a'), ['a3', 'a4'], 'meta');
    await writer.flush();
    expect(await list('a')).toEqual(['a4', 'a3', 'a2']);
  });

  it('gives up what a failed write had when it retries none, or when keeping it would hold too much', async () => {
    for (const options of [{ retryFailed: false }, { retryFailed: true, maxHeldUnits: 4 }]) {
      const { redis, writer, key, list } = setUp(options);
      await dropConnection(redis);
      // With the bound of 4 units, the third entry (6 units) starts a write at once, which fails.
      writer.add(key('a'), ['a1', 'a2', 'a3'], 'meta');
      await writer.flush();
      await redis.connect();
      writer.add(key('b'), ['b1'], 'meta');
      await writer.flush();
      expect(await list('a')).toEqual([]);
      expect(await list('b')).toEqual(['b1']);
    }
  });

  it('passes over a key that holds no list and writes the others', async () => {
    const { redis, writer, key, list } = setUp();
    await redis.set(key('a'), 'not a list');
    writer.add(key('a'), ['a1'], 'meta');
    writer.add(key('b'), ['b1'], 'meta');
    await writer.flush();
    expect(await redis.get(key('a'))).toBe('not a list');
    expect(await list('b')).toEqual(['b1']);
    // Nothing of the refused key is kept to be written again.
    await redis.del(key('a'));
    await writer.flush();
    expect(await redis.exists(key('a'))).toBe(0);
  });
});
