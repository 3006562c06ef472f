import { createServer, type Socket } from 'node:net';
import { describe, expect, it, onTestFinished } from 'vitest';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { createSharedPipeline } from '../../src/redis/shared-pipeline.ts';
import { testConfig } from '../support/context.ts';

function redisForTest() {
  const config = testConfig();
  const redis = connectRedis(config.redisUrl, 'command', 'shared-pipeline-test');
  onTestFinished(() => closeRedis(redis));
  return { redis, key: (name: string) => `${config.keyPrefix}:${name}` };
}

describe('shared pipeline', () => {
  it('gives each caller of the same turn its own replies, in order', async () => {
    const { redis, key } = redisForTest();
    await redis.hset(key('h'), { a: '1', b: '2' });
    await redis.set(key('s'), 'x');
    const shared = createSharedPipeline(redis);
    const [first, second, empty] = await Promise.all([
      shared((p) => p.hmget(key('h'), 'a', 'b', 'c').get(key('s'))),
      shared((p) => p.hgetall(key('h'))),
      shared(() => undefined),
    ]);
    expect(first).toEqual([['1', '2', null], 'x']);
    expect(second).toEqual([{ a: '1', b: '2' }]);
    expect(empty).toEqual([]);
  });

  it('fails only the caller whose command failed', async () => {
    const { redis, key } = redisForTest();
    await redis.set(key('s'), 'x');
    const shared = createSharedPipeline(redis);
    const [bad, good] = await Promise.allSettled([
      shared((p) => p.hgetall(key('s'))),
      shared((p) => p.get(key('s'))),
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
    const redis = connectRedis(`redis://127.0.0.1:${port}`, 'reads', 'shared-pipeline-timeout');
    onTestFinished(() => redis.disconnect());
    const shared = createSharedPipeline(redis, 300);
    const started = Date.now();
    await expect(shared((p) => p.get('k'))).rejects.toThrow('Command timed out');
    expect(Date.now() - started).toBeLessThan(2000);
  });
});
