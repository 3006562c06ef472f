/**
 * Recent payloads per device (VIGIL_DEVICE_RECENT_PAYLOADS): newest first, bounded in count and in
 * bytes (a long payload shortened and marked), with each one's outcome and statuses; none with 0.
 * The worker gathers them from its acknowledged steps and writes them a moment later: what it
 * gathered is written at once per device, a failed write is tried again with the next one, and
 * stopping writes what is left.
 */
import { describe, expect, it, onTestFinished } from 'vitest';
import { createKeys } from '../../src/keys.ts';
import { createLogger } from '../../src/log/logger.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { listRecentPayloads } from '../../src/recent-payloads/list-recent-payloads.ts';
import {
  RECENT_PAYLOADS_MAX_BYTES,
  type RecentPayload,
} from '../../src/recent-payloads/recent-payload-codec.ts';
import {
  startRecentPayloadWriter,
  type KeptDevice,
} from '../../src/recent-payloads/recent-payload-writer.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';
import { provisionComfort, startPipeline, type Pipeline } from '../support/pipeline.ts';

async function logged(p: Pipeline, env: string, count: number): Promise<void> {
  await eventually(async () => (await p.redis.llen(p.keys.ingestLog(env))) >= count, {
    message: `${count} ingestion log entries`,
  });
}

describe('recent payloads', () => {
  it('keeps the newest N payloads of a device with outcome and statuses, within 64 KiB', async () => {
    const p = await startPipeline({ roles: 'gateway,worker', deviceRecentPayloads: 3 });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    for (const t of [20, 21, 26, 22]) {
      expect(
        (await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: t }))).status,
      ).toBe(202);
    }
    await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: 'warm' }));
    await logged(p, 'acme', 5);
    const temperatures = (list: RecentPayload[]) =>
      list.map((r) => (JSON.parse(r.payload) as { Temperature: unknown }).Temperature);
    const recent = await eventually(() => listRecentPayloads(p.redis, p.keys, 'acme', 'd1'), {
      until: (list) => list.length === 3 && temperatures(list)[0] === 'warm',
      message: 'the newest three payloads kept',
    });
    expect(temperatures(recent)).toEqual(['warm', 22, 26]);
    expect(recent[1]).toMatchObject({ outcome: 'accepted', statuses: { Temperature: 'SUCCESS' } });
    expect(recent[2]).toMatchObject({ outcome: 'accepted', statuses: { Temperature: 'WARNING' } });
    expect(recent[0]?.outcome).not.toBe('accepted');
    expect(recent[0]?.code).toBeTruthy();

    // A payload longer than its share (64 KiB / 3) is kept shortened, and says how long it was.
    const long = JSON.stringify({ deviceName: 'd1', Temperature: 20, Note: 'x'.repeat(40_000) });
    await p.post('gateway/submit', key, long);
    await logged(p, 'acme', 6);
    const [newest] = await eventually(() => listRecentPayloads(p.redis, p.keys, 'acme', 'd1'), {
      until: (list) => list[0]?.payloadBytes !== undefined,
      message: 'the long payload kept',
    });
    expect(newest?.payloadBytes).toBe(Buffer.byteLength(long));
    expect(long.startsWith(newest!.payload)).toBe(true);
    expect(newest!.payload.length).toBeLessThan(RECENT_PAYLOADS_MAX_BYTES / 3);
    const texts = await p.redis.lrange(p.keys.recentPayloads('acme', 'd1'), 0, -1);
    expect(texts.reduce((n, t) => n + Buffer.byteLength(t), 0)).toBeLessThanOrEqual(
      RECENT_PAYLOADS_MAX_BYTES,
    );
  });

  it('keeps none with 0', async () => {
    const p = await startPipeline({ roles: 'gateway,worker', deviceRecentPayloads: 0 });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: 20 }));
    await logged(p, 'acme', 1);
    // Stopping writes what the worker gathered: with 0 it gathered nothing.
    await p.vigil.close();
    expect(await p.redis.exists(p.keys.recentPayloads('acme', 'd1'))).toBe(0);
  });
});

/** Entries of device `device` as the worker stores them (readRecentPayload's form) for ingest ids `ids`. */
function kept(device: string, ...ids: string[]): [string, KeptDevice] {
  return [
    device,
    { env: 'acme', device, texts: ids.map((i) => `{"t":1,"i":"${i}","o":"accepted"}\nbody ${i}`) },
  ];
}

async function writerForTest(count: number, maxGatheredUnits?: number) {
  const config = testConfig();
  const redis = connectRedis(config.redisUrl, 'command', 'recent-payloads-test');
  onTestFinished(() => closeRedis(redis));
  const keys = createKeys(config.keyPrefix);
  // No timer write within a test: each writes with flush() or close().
  const writer = startRecentPayloadWriter({
    redis,
    keys,
    count,
    log: createLogger('silent'),
    flushMs: 3_600_000,
    ...(maxGatheredUnits === undefined ? {} : { maxGatheredUnits }),
  });
  const key = (device: string) => keys.recentPayloads('acme', device);
  /** What the worker would hand over: the entries by their device's list key. */
  const add = (...devices: [string, KeptDevice][]) =>
    writer.add(new Map(devices.map(([device, k]) => [key(device), k])));
  const ids = async (device: string) =>
    (await redis.lrange(key(device), 0, -1)).map((t) => /"i":"([^"]*)"/.exec(t)?.[1]);
  const written = async () => Number(await redis.get(keys.recentPayloadsWritten('acme')));
  // The devices the tests write for exist (the writer passes over deleted ones).
  await redis.zadd(keys.devices('acme'), 0, 'd1', 0, 'd2');
  return { redis, writer, keys, key, add, ids, written };
}

describe('recent payload writer', () => {
  it('writes what several steps gathered at once per device, newest first, the newest N', async () => {
    const { redis, writer, key, add, ids, written } = await writerForTest(3);
    add(kept('d1', 'a', 'b'));
    add(kept('d1', 'c', 'd', 'e'), kept('d2', 'x'));
    expect(await redis.exists(key('d1'), key('d2'))).toBe(0);
    await writer.flush();
    expect(await ids('d1')).toEqual(['e', 'd', 'c']);
    expect(await ids('d2')).toEqual(['x']);
    // The console's live pages see that the environment's payloads changed: one raise per write.
    expect(await written()).toBe(1);
    add(kept('d1', 'f'));
    await writer.close();
    expect(await ids('d1')).toEqual(['f', 'e', 'd']);
    expect(await written()).toBe(2);
  });

  it('keeps what a failed write had and writes it with the next one, in order', async () => {
    const { redis, writer, add, ids } = await writerForTest(3);
    add(kept('d1', 'a', 'b'));
    redis.disconnect();
    await writer.flush();
    await eventually(() => redis.status === 'end', { message: 'the connection closed' });
    await redis.connect();
    add(kept('d1', 'c', 'd'));
    await writer.flush();
    expect(await ids('d1')).toEqual(['d', 'c', 'b']);
  });

  it('gives up what a failed write had when keeping it would hold more than its bound', async () => {
    // Each entry is 37 UTF-16 units: the bound holds two, not three. Three gathered start a write
    // at once, which fails.
    const { redis, writer, add, ids } = await writerForTest(3, 100);
    redis.disconnect();
    add(kept('d1', 'a', 'b', 'c'));
    await writer.flush();
    await eventually(() => redis.status === 'end', { message: 'the connection closed' });
    await redis.connect();
    add(kept('d2', 'c', 'd'));
    await writer.flush();
    expect(await ids('d1')).toEqual([]);
    expect(await ids('d2')).toEqual(['d', 'c']);
  });

  it('writes nothing of a device deleted since its step, and leaves a deleted environment deleted', async () => {
    const { redis, writer, keys, key, add, ids, written } = await writerForTest(3);
    await redis.zrem(keys.devices('acme'), 'd1');
    add(kept('d1', 'a'), kept('d2', 'b'));
    await writer.flush();
    expect(await redis.exists(key('d1'))).toBe(0);
    expect(await ids('d2')).toEqual(['b']);
    await redis.del(keys.devices('acme'), keys.recentPayloadsWritten('acme'));
    add(kept('d2', 'c'));
    await writer.flush();
    expect(await ids('d2')).toEqual(['b']);
    expect(await written()).toBe(0);
  });

  it('passes over a key that holds no list and writes the others', async () => {
    const { redis, writer, key, add, ids } = await writerForTest(3);
    await redis.set(key('d1'), 'not a list');
    add(kept('d1', 'a'), kept('d2', 'b'));
    await writer.flush();
    expect(await redis.get(key('d1'))).toBe('not a list');
    expect(await ids('d2')).toEqual(['b']);
  });

  it('reads an entry written twice (a write whose reply was lost, tried again) once', async () => {
    const { redis, keys, key } = await writerForTest(3);
    await redis.lpush(key('d1'), ...kept('d1', 'a', 'b', 'b')[1].texts);
    const read = await listRecentPayloads(redis, keys, 'acme', 'd1');
    expect(read.map((r) => r.ingestId)).toEqual(['b', 'a']);
  });

  it('skips an entry an older Vigil wrote as one JSON text, and reads the rest', async () => {
    const { redis, keys, key } = await writerForTest(3);
    const older = JSON.stringify({ t: 5, i: 'old', o: 'accepted', p: '{"a":1}', s: { T: 'SUCCESS' } });
    await redis.lpush(key('d1'), ...kept('d1', 'a')[1].texts, older, ...kept('d1', 'b')[1].texts);
    const read = await listRecentPayloads(redis, keys, 'acme', 'd1');
    expect(read.map((r) => r.ingestId)).toEqual(['b', 'a']);
  });
});
