/**
 * Hashes kept in the process with Redis's client tracking: a kept hash is served without a round
 * trip, every change (by any connection) reaches the next reads, and a lost connection, whose
 * invalidations may be lost with it, never leaves a stale hash behind.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import type { Redis } from '../../src/redis/connect.ts';
import { createConnections } from '../../src/redis/connections.ts';
import { openTrackedHashes } from '../../src/redis/tracked-hashes.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

function setUp(name: string, max?: number) {
  const config = testConfig();
  const connections = createConnections(config);
  const writer = connections.command(`${name}-writer`);
  const hashes = openTrackedHashes(connections, name, createLogger('silent'), max);
  onTestFinished(async () => {
    await hashes.close();
    await connections.close();
  });
  return { writer, hashes, key: `${config.keyPrefix}:tracked` };
}

/** Closes the connection named `name` from Redis's side. */
async function killConnection(redis: Redis, name: string) {
  const list = (await redis.client('LIST')) as string;
  const line = list.split('\n').find((l) => l.includes(` name=${name} `));
  const id = /id=(\d+)/.exec(line ?? '')?.[1];
  if (!id) throw new Error(`no connection named ${name}`);
  await redis.client('KILL', 'ID', id);
}

describe('tracked hashes', () => {
  it('serves a kept hash until Redis says it changed, then reads the change', async () => {
    const { writer, hashes, key } = setUp(`tracked-${process.pid}-a`);
    await writer.hset(key, { a: '1' });
    await eventually(() => hashes.tracking(), { message: 'tracking on' });
    const first = await hashes.hgetall(key);
    expect(first).toEqual({ a: '1' });
    expect(await hashes.hgetall(key)).toBe(first); // the kept object: no read from Redis

    await writer.hset(key, { a: '2' });
    await eventually(async () => (await hashes.hgetall(key)).a === '2', { message: 'the change' });
    const second = await hashes.hgetall(key);
    expect(await hashes.hgetall(key)).toBe(second);

    await writer.multi().del(key).hset(key, { b: '3' }).exec();
    await eventually(async () => (await hashes.hgetall(key)).b === '3', { message: 'a transaction' });
    expect(await hashes.hgetall(key)).toEqual({ b: '3' });
    await writer.del(key);
    await eventually(async () => Object.keys(await hashes.hgetall(key)).length === 0, {
      message: 'the deletion',
    });
  });

  it('bounded, keeps the hashes read most recently and reads a hash let go, with its changes', async () => {
    const { writer, hashes, key } = setUp(`tracked-${process.pid}-max`, 2);
    const [a, b, c] = ['a', 'b', 'c'].map((k) => `${key}:${k}`) as [string, string, string];
    await writer.hset(a, { v: '1' });
    await writer.hset(b, { v: '1' });
    await writer.hset(c, { v: '1' });
    await eventually(() => hashes.tracking(), { message: 'tracking on' });
    const first = await hashes.hgetall(a);
    const second = await hashes.hgetall(b);
    expect(await hashes.hgetall(a)).toBe(first);
    await hashes.hgetall(c); // lets b go: a was read more recently
    expect(await hashes.hgetall(a)).toBe(first);
    const again = await hashes.hgetall(b);
    expect(again).not.toBe(second); // read from Redis again
    expect(again).toEqual({ v: '1' });

    // Kept now: c and b. A change of a hash kept (c) and of one let go (a) both reach the next reads.
    await writer.hset(c, { v: '2' });
    await writer.hset(a, { v: '2' });
    await eventually(async () => (await hashes.hgetall(c)).v === '2', { message: 'the kept one changed' });
    expect(await hashes.hgetall(a)).toEqual({ v: '2' });
  });

  for (const connection of ['reads', 'invalidations']) {
    it(`forgets what it kept when its ${connection} connection is lost, as changes meanwhile go unannounced`, async () => {
      const name = `tracked-${process.pid}-${connection}`;
      const { writer, hashes, key } = setUp(name);
      await writer.hset(key, { a: '1' });
      await eventually(() => hashes.tracking(), { message: 'tracking on' });
      expect(await hashes.hgetall(key)).toEqual({ a: '1' });

      await killConnection(writer, `${name}-${connection}`);
      await writer.hset(key, { a: '2' });
      await eventually(async () => (await hashes.hgetall(key)).a === '2', {
        message: 'the change made while the connection was lost',
      });
      await eventually(() => hashes.tracking(), { message: 'tracking on again' });
      const kept = await hashes.hgetall(key);
      expect(kept).toEqual({ a: '2' });
      await writer.hset(key, { a: '3' });
      await eventually(async () => (await hashes.hgetall(key)).a === '3', {
        message: 'a change after tracking is on again',
      });
    });
  }
});
