import { describe, expect, it, onTestFinished } from 'vitest';
import { queueCommands } from '../../src/redis/command.ts';
import { createIngestLog, type IngestLogRecord } from '../../src/ingest/ingest-log.ts';
import { createIngestHarness } from './ingest-harness.ts';

const entry = (env: string, n: number): IngestLogRecord => ({
  env,
  receivedMs: 1_700_000_000_000 + n,
  ingestId: `id-${n}`,
  gateway: 'submit',
  deviceName: n % 2 === 0 ? `d${n}` : null,
  outcome: 'rejected',
  code: 'UNKNOWN_DEVICE',
  message: null,
});

describe('ingestion log', () => {
  it('keeps each environment’s newest entries first, capped at its size', async () => {
    const h = createIngestHarness();
    onTestFinished(() => h.close());
    const log = createIngestLog({ redis: h.redis, keys: h.keys, size: 3 });
    await log.record([entry('a', 1), entry('b', 2), entry('a', 3)]);
    await log.record([entry('a', 4), entry('a', 5)]);
    const a = await log.list('a', 10);
    expect(a.map((e) => e.ingestId)).toEqual(['id-5', 'id-4', 'id-3']);
    const { env: _env, receivedMs, ...stored } = entry('a', 5);
    expect(a[0]).toEqual({
      receivedUTC: new Date(receivedMs).toISOString(),
      ...stored,
      definitionVersion: null,
    });
    expect((await log.list('b', 10)).map((e) => e.ingestId)).toEqual(['id-2']);
    expect(await log.list('a', 1)).toHaveLength(1);
    expect(await log.list('nobody', 10)).toEqual([]);
    expect(await h.redis.llen(h.keys.ingestLog('a'))).toBe(3);
  });

  it('gives its writes as commands, for a caller to run with its own (a MULTI here)', async () => {
    const h = createIngestHarness();
    onTestFinished(() => h.close());
    const log = createIngestLog({ redis: h.redis, keys: h.keys, size: 2 });
    const multi = h.redis.multi().set(`${h.keys.ingestLog('a')}:marker`, '1');
    queueCommands(multi, log.commands([entry('a', 1), entry('b', 2), entry('a', 3), entry('a', 4)]));
    expect(await h.redis.llen(h.keys.ingestLog('a'))).toBe(0); // nothing before EXEC
    await multi.exec();
    expect((await log.list('a', 10)).map((e) => e.ingestId)).toEqual(['id-4', 'id-3']);
    expect((await log.list('b', 10)).map((e) => e.ingestId)).toEqual(['id-2']);
    expect(await h.redis.get(`${h.keys.ingestLog('a')}:marker`)).toBe('1');
  });

  it('stores plain acceptances compactly with their definition version, and serves every kind of entry the same way', async () => {
    const h = createIngestHarness();
    onTestFinished(() => h.close());
    const log = createIngestLog({ redis: h.redis, keys: h.keys, size: 10 });
    const accepted = (n: number, deviceName: string): IngestLogRecord => ({
      ...entry('a', n),
      deviceName,
      outcome: 'accepted',
      code: null,
      message: null,
      definitionVersion: 7,
    });
    await log.record([accepted(1, 'device 1.a:b'), accepted(2, 'tab\there'), entry('a', 3)]);
    // A plain acceptance an earlier version wrote, without the definition version.
    await h.redis.rpush(h.keys.ingestLog('a'), `A\t${1_700_000_000_000}\tid-0\tsubmit\tdevice 0`);
    // An entry an earlier version wrote (JSON throughout) reads as before.
    const earlier = {
      receivedUTC: '2026-11-23T10:00:00.000Z',
      ingestId: 'old',
      gateway: 'raw',
      deviceName: 'd',
      outcome: 'accepted',
      code: null,
      message: null,
    };
    await h.redis.rpush(h.keys.ingestLog('a'), JSON.stringify(earlier));
    const stored = await h.redis.lrange(h.keys.ingestLog('a'), 0, -1);
    expect(stored[2]).toBe(`V\t${1_700_000_000_001}\tid-1\tsubmit\t7\tdevice 1.a:b`);
    expect(stored[1]?.startsWith('{')).toBe(true); // a name with a tab stays JSON
    const iso = (n: number) => new Date(1_700_000_000_000 + n).toISOString();
    expect(await log.list('a', 10)).toEqual([
      {
        receivedUTC: iso(3),
        ingestId: 'id-3',
        gateway: 'submit',
        deviceName: null,
        outcome: 'rejected',
        code: 'UNKNOWN_DEVICE',
        message: null,
        definitionVersion: null,
      },
      {
        receivedUTC: iso(2),
        ingestId: 'id-2',
        gateway: 'submit',
        deviceName: 'tab\there',
        outcome: 'accepted',
        code: null,
        message: null,
        definitionVersion: 7,
      },
      {
        receivedUTC: iso(1),
        ingestId: 'id-1',
        gateway: 'submit',
        deviceName: 'device 1.a:b',
        outcome: 'accepted',
        code: null,
        message: null,
        definitionVersion: 7,
      },
      {
        receivedUTC: iso(0),
        ingestId: 'id-0',
        gateway: 'submit',
        deviceName: 'device 0',
        outcome: 'accepted',
        code: null,
        message: null,
        definitionVersion: null,
      },
      { ...earlier, definitionVersion: null },
    ]);
  });
});
