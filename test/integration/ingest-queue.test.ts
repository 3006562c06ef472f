/**
 * The ingest queue's own promises, on the real Redis: partitions are shared fairly among live
 * workers and taken over when a worker's leases expire; a worker processes each partition in
 * order, retries failed steps, and moves an entry that keeps failing to the dead-letter stream
 * while the other partitions — and the rest of its own partition, after it — keep flowing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Registry } from 'prom-client';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startRedis } from '../../scripts/lib/local-services.ts';
import type { Config } from '../../src/config/schema.ts';
import { createIngestLog } from '../../src/ingest/ingest-log.ts';
import { createLogger } from '../../src/log/logger.ts';
import { createIngestProducer } from '../../src/queue/ingest-producer.ts';
import { finishStep } from '../../src/queue/fenced-step.ts';
import {
  countEntries,
  ensureGroups,
  entryFields,
  INGEST_CONSUMER,
  INGEST_GROUP,
  listDeadLetters,
  readNew,
} from '../../src/queue/ingest-queue.ts';
import type { IngestItem } from '../../src/domain/ingest-item.ts';
import { partitionOf } from '../../src/queue/partition.ts';
import { createPartitionLeases } from '../../src/queue/partition-leases.ts';
import { closeRedis, connectRedis, type Redis } from '../../src/redis/connect.ts';
import { createConnections } from '../../src/redis/connections.ts';
import { createKeys } from '../../src/keys.ts';
import { deadLetterOutcomes } from '../../src/worker/outcomes.ts';
import { startWorker } from '../../src/worker/start-worker.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

const log = createLogger('silent');

async function setup(overrides: Parameters<typeof testConfig>[0] = {}) {
  const config = testConfig({ queuePartitions: 4, ...overrides });
  const keys = createKeys(config.keyPrefix);
  const redis = connectRedis(config.redisUrl, 'blocking', 'test-queue');
  onTestFinished(() => closeRedis(redis));
  await redis.ping();
  return { config, keys, redis };
}

function item(device: string, n: number): IngestItem {
  return {
    id: `${device}-${n}`,
    env: 'e1',
    gateway: 'raw',
    via: 'http',
    receivedMs: 1_700_000_000_000 + n,
    body: String(n),
    bodyIsHex: false,
    deviceName: device,
    client: '127.0.0.1',
  };
}

/** A device name for each partition (the routing key of a raw item is env + device name). */
function devicePerPartition(partitions: number): string[] {
  const found = new Map<number, string>();
  for (let i = 0; found.size < partitions; i++) {
    const p = partitionOf(`e1\ndev-${i}`, partitions);
    if (!found.has(p)) found.set(p, `dev-${i}`);
  }
  return [...found.entries()].sort((a, b) => a[0] - b[0]).map(([, d]) => d);
}

/** XREADGROUP calls Redis has completed (its command statistics). */
async function xreadgroupCalls(redis: Redis): Promise<number> {
  // The worker's reads of new entries: XREADGROUP inside its fenced read script, counted here too.
  return Number(/^cmdstat_xreadgroup:calls=(\d+)/m.exec(await redis.info('commandstats'))?.[1] ?? 0);
}

/** Clients blocked waiting for new entries (XREAD), from CLIENT LIST. */
function blockedReads(clients: unknown): number {
  return String(clients)
    .split('\n')
    .filter((c) => / flags=\w*b\w* /.test(c) && / cmd=xread /.test(c)).length;
}

async function worker(
  config: Config,
  process: (items: IngestItem[]) => Promise<void>,
  deadLetterLog?: Parameters<typeof startWorker>[0]['deadLetterLog'],
) {
  const connections = createConnections(config);
  const w = await startWorker({
    config,
    connections,
    keys: createKeys(config.keyPrefix),
    log,
    metrics: new Registry(),
    process: async (items) => {
      await process(items);
      return { payloads: items.length, values: 0, staleValues: 0 };
    },
    ...(deadLetterLog ? { deadLetterLog } : {}),
  });
  onTestFinished(async () => {
    await w.close();
    await connections.close();
  });
  return w;
}

describe('backlog counts', () => {
  it('counts each environment’s payloads as entries are written and takes an entry off once, however often it is acknowledged', async () => {
    const { config, keys, redis } = await setup({ queuePartitions: 1 });
    await ensureGroups(redis, keys, 1);
    const producer = createIngestProducer({ connection: redis, keys, config });
    await producer.add([item('a', 0), { ...item('b', 1), env: 'e2' }, item('c', 2)]);
    await producer.add([item('a', 3), item('a', 4), item('a', 5)]);
    expect(await redis.hgetall(keys.queueBacklog())).toEqual({ e1: '5', e2: '1' });

    const got = await readNew(redis, keys, { leaseKeys: [], values: [] }, [0], 1);
    const [first] = 'entries' in got ? got.entries : [];
    expect(first?.payloadsByEnv).toEqual(
      new Map([
        ['e1', 2],
        ['e2', 1],
      ]),
    );
    // An entry finished twice (a retried acknowledgement) is taken off the counts once.
    const noLeases = { leaseKeys: [], values: [] };
    await finishStep(redis, keys, noLeases, [first!]);
    await finishStep(redis, keys, noLeases, [first!]);
    expect(await redis.hgetall(keys.queueBacklog())).toEqual({ e1: '3' });
    expect(await producer.sampleBacklog()).toEqual({ entries: 1, payloadsByEnv: new Map([['e1', 3]]) });
  });

  it('clears counts left by entries removed behind the queue’s back once a sample finds it empty', async () => {
    const { config, keys, redis } = await setup({ queuePartitions: 2 });
    const producer = createIngestProducer({ connection: redis, keys, config });
    await producer.add([item('a', 0)]);
    await redis.del(keys.ingestStream(0), keys.ingestStream(1));
    expect(await redis.hgetall(keys.queueBacklog())).toEqual({ e1: '1' });
    expect(await producer.sampleBacklog()).toEqual({ entries: 0, payloadsByEnv: new Map() });
    expect(await redis.exists(keys.queueBacklog())).toBe(0);
  });
});

describe('partition leases', () => {
  it('shares the partitions fairly between live workers and hands them all to the survivor', async () => {
    const { config, keys, redis } = await setup({ queuePartitions: 8 });
    const lease = () => createPartitionLeases({ redis, keys, partitions: 8, leaseMs: 1500, log });
    const a = lease();
    onTestFinished(() => a.close());
    await a.tick();
    expect(a.owned()).toHaveLength(8);
    const b = lease();
    onTestFinished(() => b.close());
    await b.tick(); // b is live: a's share drops to 4
    await a.tick();
    expect(a.releasing().size).toBe(4);
    // Between steps a hands back what exceeds its share.
    expect(await a.releasePending(a.owned())).toHaveLength(4);
    await b.tick();
    expect(a.owned()).toHaveLength(4);
    expect(b.owned()).toHaveLength(4);
    expect(new Set([...a.owned(), ...b.owned()]).size).toBe(8);
    await a.close();
    await b.tick();
    expect(b.owned()).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(config.queuePartitions).toBe(8);
  });

  it('takes over the partitions of a worker that died only once its leases expire', async () => {
    const { keys, redis } = await setup();
    // A dead worker's leases: they stay until their TTL runs out.
    const leases = [0, 1, 2, 3].map((p) => keys.partitionLease(p));
    for (const lease of leases) await redis.set(lease, 'dead-worker', 'PX', 200);
    const b = createPartitionLeases({ redis, keys, partitions: 4, leaseMs: 1500, log });
    onTestFinished(() => b.close());
    await b.tick();
    expect(b.owned()).toEqual([]);
    await eventually(async () => (await redis.exists(...leases)) === 0, {
      message: 'the dead leases to expire',
    });
    await b.tick();
    expect(b.owned()).toEqual([0, 1, 2, 3]);
  });
});

describe('worker steps', () => {
  it('takes everything waiting as one step, in queue order per partition', async () => {
    const { config, keys, redis } = await setup({ workerConcurrency: 1 });
    const producer = createIngestProducer({ connection: redis, keys, config });
    const devices = devicePerPartition(4);
    for (let n = 0; n < 50; n++) await producer.add(devices.map((d) => item(d, n)));
    const steps: IngestItem[][] = [];
    await worker(config, (items) => {
      steps.push(items);
      return Promise.resolve();
    });
    await eventually(async () => (await countEntries(redis, keys, 4)) === 0, {
      timeoutMs: 10_000,
      message: 'drained',
    });
    const seen = steps.flat();
    expect(seen).toHaveLength(200);
    // 200 entries waiting before the worker started: a few large steps, not one per entry.
    expect(steps.length).toBeLessThan(20);
    for (const d of devices) {
      expect(seen.filter((i) => i.deviceName === d).map((i) => i.body)).toEqual(
        Array.from({ length: 50 }, (_, n) => String(n)),
      );
    }
  });

  it('takes a backlog in full steps one after another, without the steady-load interval', async () => {
    // A full read means more is waiting, and waiting would not make the next step any larger.
    // The interval is far longer than the wait for the drain: a single wait fails the test.
    const { config, keys, redis } = await setup({
      queuePartitions: 1,
      workerConcurrency: 1,
      workerBatchMaxPayloads: 10,
      workerStepIntervalMs: 3_600_000,
    });
    const producer = createIngestProducer({ connection: redis, keys, config });
    for (let n = 0; n < 100; n++) await producer.add([item('dev-0', n)]);
    const steps: number[] = [];
    await worker(config, (items) => {
      steps.push(items.length);
      return Promise.resolve();
    });
    await eventually(async () => (await countEntries(redis, keys, 1)) === 0, {
      timeoutMs: 60_000,
      message: 'drained',
    });
    expect(steps.reduce((a, b) => a + b, 0)).toBe(100);
    // At most 10 per step, so at least 10 steps, none of them after the interval.
    expect(steps.length).toBeGreaterThanOrEqual(10);
    expect(Math.max(...steps)).toBeLessThanOrEqual(10);
  });

  it('retries a failed step until it succeeds, losing nothing', async () => {
    const { config, keys, redis } = await setup({ jobBackoffMs: 20, jobBackoffMaxMs: 50 });
    const producer = createIngestProducer({ connection: redis, keys, config });
    const devices = devicePerPartition(4);
    let failuresLeft = 5;
    const done = new Set<string>();
    await worker(config, (items) => {
      if (failuresLeft > 0) {
        failuresLeft -= 1;
        return Promise.reject(new Error('InfluxDB write failed (503)'));
      }
      for (const i of items) done.add(i.id);
      return Promise.resolve();
    });
    for (let n = 0; n < 20; n++) await producer.add(devices.map((d) => item(d, n)));
    await eventually(() => done.size === 80, { timeoutMs: 10_000, message: 'all processed' });
    await eventually(async () => (await countEntries(redis, keys, 4)) === 0, {
      timeoutMs: 5000,
      message: 'acknowledged',
    });
    expect(await listDeadLetters(redis, keys)).toEqual([]);
  });

  it('reads what a lost reply left pending once its connections come back', async () => {
    // A private Redis: this test drops every client connection.
    const dir = mkdtempSync(join(tmpdir(), 'vigil-queue-reconnect-'));
    onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
    const server = await startRedis({ dataDir: dir });
    onTestFinished(() => server.stop());
    const { config, keys, redis } = await setup({ workerConcurrency: 1, redisUrl: server.url });
    const processed: string[] = [];
    await worker(config, (items) => {
      processed.push(...items.map((i) => i.id));
      return Promise.resolve();
    });
    await eventually(async () => blockedReads(await redis.call('CLIENT', 'LIST')) > 0, {
      message: 'the worker blocked reading new entries',
    });
    // An entry delivered to the worker's consumer whose reply never reached it: what a read
    // resent across a dropped connection, or Redis restarted from an AOF, leaves behind.
    const [device] = devicePerPartition(4);
    const stream = keys.ingestStream(partitionOf(`e1\n${device!}`, 4));
    await redis
      .multi()
      .xadd(stream, '*', ...entryFields([item(device!, 1)]))
      .call('XREADGROUP', 'GROUP', INGEST_GROUP, INGEST_CONSUMER, 'COUNT', 10, 'STREAMS', stream, '>')
      .exec();
    // The worker reads on (new entries only) and leaves the pending one alone: two more of its reads.
    const reads = await xreadgroupCalls(redis);
    await eventually(async () => (await xreadgroupCalls(redis)) >= reads + 2, { message: 'two more reads' });
    expect(processed).toEqual([]);
    // The worker's connections drop and come back.
    await redis.call('CLIENT', 'KILL', 'TYPE', 'normal', 'SKIPME', 'yes');
    await eventually(async () => (await countEntries(redis, keys, 4)) === 0, {
      timeoutMs: 10_000,
      message: 'the pending entry processed and acknowledged',
    });
    expect(processed).toEqual([`${device!}-1`]);
  });

  it('dead-letters an entry that keeps failing; its partition goes on after it, the others never stop', async () => {
    const { config, keys, redis } = await setup({ jobAttempts: 4, jobBackoffMs: 10, jobBackoffMaxMs: 40 });
    const producer = createIngestProducer({ connection: redis, keys, config });
    const devices = devicePerPartition(4);
    const processed: IngestItem[] = [];
    const ingestLog = createIngestLog({ redis, keys, size: 100 });
    await worker(
      config,
      (items) => {
        if (items.some((i) => i.body === 'poison')) return Promise.reject(new Error('cannot process poison'));
        processed.push(...items);
        return Promise.resolve();
      },
      (items) => ingestLog.commands(deadLetterOutcomes(items)),
    );
    await producer.add(devices.map((d) => item(d, 0)));
    await producer.add([{ ...item(devices[1]!, 1), body: 'poison' }]);
    for (let n = 2; n < 10; n++) await producer.add(devices.map((d) => item(d, n)));
    await eventually(() => processed.length === 4 * 9, { timeoutMs: 10_000, message: 'the good payloads' });
    const dead = await listDeadLetters(redis, keys);
    expect(dead).toHaveLength(1);
    expect(dead[0]).toMatchObject({ partition: 1, items: 1, reason: 'cannot process poison' });
    // The payload's ingestion log says so, once, without the server-side reason.
    const logged = await ingestLog.list('e1', 100);
    expect(logged).toEqual([
      {
        receivedUTC: new Date(1_700_000_000_001).toISOString(),
        ingestId: `${devices[1]!}-1`,
        gateway: 'raw',
        deviceName: devices[1],
        outcome: 'rejected',
        code: 'INTERNAL',
        message: expect.not.stringContaining('cannot process poison') as string,
        definitionVersion: null,
      },
    ]);
    for (const d of devices) {
      expect(processed.filter((i) => i.deviceName === d).map((i) => i.body)).toEqual([
        '0',
        '2',
        '3',
        '4',
        '5',
        '6',
        '7',
        '8',
        '9',
      ]);
    }
    await eventually(async () => (await countEntries(redis, keys, 4)) === 0, {
      timeoutMs: 5000,
      message: 'acknowledged',
    });
  });
});
