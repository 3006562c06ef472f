/**
 * The event outbox has several readers (the InfluxDB writer, the notifier), each with its own
 * consumer group: none may lose an entry because another has finished with it, and entries go once
 * every group is past them (with a length cap as the last resort).
 */
import { describe, expect, it } from 'vitest';
import type { EventRecord } from '../../src/domain/types.ts';
import { ensureOutboxGroup, startOutboxConsumer } from '../../src/events/outbox-consumer.ts';
import { compareStreamIds, createOutboxTrimmer } from '../../src/events/outbox-trim.ts';
import { createLogger } from '../../src/log/logger.ts';
import { provisionComfort, startPipeline } from '../support/pipeline.ts';
import { makeEvent } from '../support/alerting.ts';
import { eventually } from '../support/eventually.ts';

type Entries = [string, string[]][];
type GroupRead = [string, Entries][] | null;

describe('event outbox', () => {
  it('keeps an event for another reader after the InfluxDB writer has written and acknowledged it', async () => {
    const p = await startPipeline({ roles: 'gateway,worker' });
    const { key } = await provisionComfort(p, 'acme', ['d1']);
    await ensureOutboxGroup(p.redis, p.keys, 'other');
    const res = await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'd1', Temperature: 31 }));
    expect(res.status).toBe(202);
    const stream = p.keys.eventOutbox();
    await eventually(
      async () => {
        const groups = (await p.redis.xinfo('GROUPS', stream)) as unknown[][];
        const influx = groups.find((g) => g[1] === 'influx');
        if (!influx) return undefined;
        const info = new Map<unknown, unknown>();
        for (let i = 0; i < influx.length; i += 2) info.set(influx[i], influx[i + 1]);
        return info.get('pending') === 0 && info.get('lag') === 0 && info.get('entries-read') === 1
          ? true
          : undefined;
      },
      { timeoutMs: 15_000, message: 'the InfluxDB writer to acknowledge the event' },
    );
    const read = (await p.redis.xreadgroup(
      'GROUP',
      'other',
      'c1',
      'COUNT',
      10,
      'STREAMS',
      stream,
      '>',
    )) as GroupRead;
    const entries = read?.[0]?.[1] ?? [];
    expect(entries).toHaveLength(1);
    const json = entries[0]?.[1][1] ?? '';
    expect(JSON.parse(json)).toMatchObject({ env: 'acme', deviceName: 'd1', eventStatus: 'CRITICAL' });
  });

  it('trims only below the oldest entry some group still needs, and caps a stream whose reader is gone', async () => {
    const p = await startPipeline({ roles: 'api' });
    const stream = `${p.config.keyPrefix}:outbox-trim-test`;
    const log = createLogger('silent');
    await p.redis.xgroup('CREATE', stream, 'fast', '$', 'MKSTREAM');
    await p.redis.xgroup('CREATE', stream, 'slow', '$');
    const ids: string[] = [];
    for (let i = 0; i < 2000; i += 500) {
      const m = p.redis.multi();
      for (let j = 0; j < 500; j++) m.xadd(stream, '*', 'e', String(i + j));
      ids.push(...((await m.exec()) ?? []).map(([, id]) => String(id)));
    }
    const readAck = async (group: string, count: number, ack: number) => {
      const got = (await p.redis.xreadgroup(
        'GROUP',
        group,
        'c',
        'COUNT',
        count,
        'STREAMS',
        stream,
        '>',
      )) as GroupRead;
      const read = (got?.[0]?.[1] ?? []).map(([id]) => id);
      if (ack > 0) await p.redis.xack(stream, group, ...read.slice(0, ack));
    };
    const trim = () =>
      createOutboxTrimmer({ redis: p.redis, stream, maxEntries: 100_000, log, everyMs: 0 }).maybeTrim();
    await readAck('fast', 2000, 2000);
    await trim();
    expect(await p.redis.xlen(stream)).toBe(2000); // "slow" has read nothing yet

    await readAck('slow', 1000, 500); // entries 500..999 pending, 1000.. not read
    await trim();
    const first = (await p.redis.xrange(stream, '-', '+', 'COUNT', 1))[0]?.[0] ?? '';
    expect(compareStreamIds(first, ids[500] ?? '')).toBeLessThanOrEqual(0);
    expect(await p.redis.xlen(stream)).toBeGreaterThanOrEqual(1500);

    await readAck('slow', 1000, 0);
    await p.redis.xack(stream, 'slow', ...ids);
    await trim();
    expect(await p.redis.xlen(stream)).toBeLessThan(200); // whole nodes only (XTRIM ~)

    const capped = createOutboxTrimmer({ redis: p.redis, stream, maxEntries: 1000, log, everyMs: 0 });
    const m = p.redis.multi();
    for (let j = 0; j < 3000; j++) m.xadd(stream, '*', 'e', String(j));
    await m.exec();
    await capped.maybeTrim(); // nobody reads the new entries: only the cap trims
    const length = await p.redis.xlen(stream);
    expect(length).toBeGreaterThanOrEqual(1000);
    expect(length).toBeLessThan(1200);
  });
  it('handles the first event after a quiet spell at once and gathers those that follow it', async () => {
    const p = await startPipeline({ roles: 'api' });
    // What the reader did, in order; its pauses to gather are held until the test has sent more.
    const seen: string[] = [];
    const pausesMs: number[] = [];
    const batches: string[][] = [];
    const gathered = Promise.withResolvers<void>();
    const consumer = startOutboxConsumer({
      connections: p.connections,
      keys: p.keys,
      group: 'gathering',
      consumer: 'c1',
      log: createLogger('silent'),
      gatherMs: 400,
      gatherWait: (ms) => {
        seen.push('pause');
        pausesMs.push(ms);
        return gathered.promise;
      },
      handle: (entries) => {
        seen.push(`batch of ${entries.length}`);
        batches.push(entries.map((e) => e.event.id));
        return Promise.resolve();
      },
    });
    try {
      await eventually(async () => (await p.redis.exists(p.keys.eventOutbox())) === 1, {
        message: 'the group made',
      });
      const emit = (e: EventRecord) => p.redis.xadd(p.keys.eventOutbox(), '*', 'e', JSON.stringify(e));
      const first = makeEvent('acme');
      await emit(first);
      await eventually(() => seen.length === 2, { message: 'the first event handled, then a pause' });
      expect(seen).toEqual(['batch of 1', 'pause']);
      expect(pausesMs[0]).toBeLessThanOrEqual(400);
      // Ten more, one by one, each its own batch for a reader that did not pause.
      const rest = Array.from({ length: 10 }, () => makeEvent('acme'));
      for (const e of rest) await emit(e);
      gathered.resolve();
      await eventually(() => batches.flat().length === 11, { message: 'every event handled' });
      expect(seen.slice(0, 3)).toEqual(['batch of 1', 'pause', 'batch of 10']);
      expect(batches).toEqual([[first.id], rest.map((e) => e.id)]);
    } finally {
      gathered.resolve();
      await consumer.close();
    }
  });
});
