import { createServer, type Socket } from 'node:net';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { createPipelinedReads } from '../../src/redis/pipelined-reads.ts';
import { testConfig } from '../support/context.ts';

function redisForTest() {
  const config = testConfig();
  const redis = connectRedis(config.redisUrl, 'reads', 'pipelined-reads-test');
  onTestFinished(() => closeRedis(redis));
  return { redis, key: (name: string) => `${config.keyPrefix}:${name}` };
}

describe('pipelined reads', () => {
  it('gives each caller of the same turn its own replies, in order', async () => {
    const { redis, key } = redisForTest();
    await redis.hset(key('h'), { a: '1', b: '2' });
    await redis.set(key('s'), 'x');
    const read = createPipelinedReads(redis);
    const [first, second, empty] = await Promise.all([
      read((r) => {
        r.hmget(key('h'), 'a', 'b', 'c');
        r.get(key('s'));
      }),
      read((r) => r.hgetall(key('h'))),
      read(() => undefined),
    ]);
    expect(first).toEqual([['1', '2', null], 'x']);
    expect(second).toEqual([{ a: '1', b: '2' }]);
    expect(empty).toEqual([]);
  });

  it('writes the commands of one turn to the socket at once', async () => {
    const { redis, key } = redisForTest();
    await redis.set(key('s'), 'x');
    const read = createPipelinedReads(redis);
    // Node's socket writes what it is given at once, one call each, unless it is corked: count them.
    const writes = [vi.spyOn(redis.stream, '_write'), vi.spyOn(redis.stream, '_writev')];
    const replies = await Promise.all([
      read((r) => {
        r.get(key('s'));
        r.hmget(key('h'), 'a');
      }),
      read((r) => r.get(key('s'))),
      read((r) => r.hgetall(key('h'))),
    ]);
    expect(replies).toEqual([['x', [null]], ['x'], [{}]]);
    expect(writes.reduce((n, spy) => n + spy.mock.calls.length, 0)).toBe(1);
  });

  it('fails only the caller whose command failed', async () => {
    const { redis, key } = redisForTest();
    await redis.set(key('s'), 'x');
    const read = createPipelinedReads(redis);
    const [bad, good] = await Promise.allSettled([
      read((r) => r.hgetall(key('s'))),
      read((r) => r.get(key('s'))),
    ]);
    expect(bad.status).toBe('rejected');
    expect(good).toEqual({ status: 'fulfilled', value: ['x'] });
  });

  it('fails its callers with "Command timed out" when Redis does not answer in time', async () => {
    // A server that accepts the connection and never answers: the hung Redis of the timeout.
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    onTestFinished(
      () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy();
          silent.close(() => resolve());
        }),
    );
    const port = (silent.address() as { port: number }).port;
    // The timers run on a clock the test moves: the read must still wait at 299 ms and fail at 300.
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    onTestFinished(() => void vi.useRealTimers());
    const redis = connectRedis(`redis://127.0.0.1:${port}`, 'reads', 'pipelined-reads-timeout');
    onTestFinished(() => redis.disconnect());
    const read = createPipelinedReads(redis, 300);
    let failure: unknown;
    void read((r) => r.get('k')).catch((err: unknown) => (failure = err));
    await vi.advanceTimersByTimeAsync(299);
    expect(failure).toBeUndefined();
    await vi.advanceTimersByTimeAsync(1);
    expect(failure).toMatchObject({ message: 'Command timed out' });
  });
});
