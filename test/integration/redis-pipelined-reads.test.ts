import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Cluster } from 'ioredis';
import { describe, expect, it, onTestFinished, vi } from 'vitest';
import { freePort } from '../../scripts/lib/local-services.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { createPipelinedReads } from '../../src/redis/pipelined-reads.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

function redisForTest() {
  const config = testConfig();
  const redis = connectRedis(config.redisUrl, 'reads', 'pipelined-reads-test');
  onTestFinished(() => closeRedis(redis));
  return { redis, key: (name: string) => `${config.keyPrefix}:${name}` };
}

/** A server that accepts connections and never answers (a hung Redis); its port. */
async function silentServer(): Promise<number> {
  const sockets: Socket[] = [];
  const server = createServer((socket) => sockets.push(socket));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return (server.address() as { port: number }).port;
}

/** A Redis Cluster of one node holding every slot, started for the test and stopped after it. */
async function oneNodeCluster(): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-cluster-'));
  const port = await freePort();
  // A lone node learns its own address from no peer: announce it, or it tells clients host ''.
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', ''];
  args.push('--cluster-enabled', 'yes', '--cluster-announce-ip', '127.0.0.1');
  const server = spawn('redis-server', args, { stdio: 'ignore' });
  onTestFinished(async () => {
    if (server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });
  const admin = connectRedis(`redis://127.0.0.1:${port}`, 'command', 'cluster-admin');
  onTestFinished(() => closeRedis(admin));
  await eventually(() => admin.call('CLUSTER', 'ADDSLOTSRANGE', '0', '16383'), {
    message: 'the node to take every slot',
  });
  await eventually(async () => (await admin.call('CLUSTER', 'INFO')) as string, {
    until: (info) => info.includes('cluster_state:ok'),
    message: 'the cluster to be ok',
  });
  const cluster = new Cluster([{ host: '127.0.0.1', port }], { enableAutoPipelining: true });
  onTestFinished(() => cluster.disconnect());
  return cluster;
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

  it('puts the commands of one turn into one pipeline, which ioredis writes at once', async () => {
    const { redis, key } = redisForTest();
    await redis.set(key('s'), 'x');
    const read = createPipelinedReads(redis);
    const replies = Promise.all([
      read((r) => {
        r.get(key('s'));
        r.hmget(key('h'), 'a');
      }),
      read((r) => r.get(key('s'))),
      read((r) => r.hgetall(key('h'))),
    ]);
    expect(redis.autoPipelineQueueSize).toBe(4);
    expect(await replies).toEqual([['x', [null]], ['x'], [{}]]);
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

  it('reads through a Redis Cluster client', async () => {
    const cluster = await oneNodeCluster();
    await cluster.hset('{d}:h', { a: '1', b: '2' });
    await cluster.set('{d}:s', 'x');
    const read = createPipelinedReads(cluster);
    const replies = await Promise.all([
      read((r) => {
        r.hmget('{d}:h', 'a', 'c');
        r.get('{d}:s');
      }),
      read((r) => r.hgetall('{d}:h')),
    ]);
    expect(replies).toEqual([[['1', null], 'x'], [{ a: '1', b: '2' }]]);
  });

  it('fails its callers with "Command timed out" when Redis does not answer in time', async () => {
    const port = await silentServer();
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
