import { describe, expect, it, onTestFinished } from 'vitest';
import { createIngestLog, type IngestLogRecord } from '../../src/ingest/ingest-log.ts';
import { createIngestHarness } from './ingest-harness.ts';

const entry = (env: string, n: number): IngestLogRecord => ({
  env,
  receivedUTC: new Date(1_700_000_000_000 + n).toISOString(),
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
    const { env: _env, ...stored } = entry('a', 5);
    expect(a[0]).toEqual(stored);
    expect((await log.list('b', 10)).map((e) => e.ingestId)).toEqual(['id-2']);
    expect(await log.list('a', 1)).toHaveLength(1);
    expect(await log.list('nobody', 10)).toEqual([]);
    expect(await h.redis.llen(h.keys.ingestLog('a'))).toBe(3);
  });

  it('appends inside a caller’s MULTI, together with its other commands', async () => {
    const h = createIngestHarness();
    onTestFinished(() => h.close());
    const log = createIngestLog({ redis: h.redis, keys: h.keys, size: 2 });
    const multi = h.redis.multi().set(`${h.keys.ingestLog('a')}:marker`, '1');
    log.appendTo(multi, [entry('a', 1), entry('b', 2), entry('a', 3), entry('a', 4)]);
    expect(await h.redis.llen(h.keys.ingestLog('a'))).toBe(0); // nothing before EXEC
    await multi.exec();
    expect((await log.list('a', 10)).map((e) => e.ingestId)).toEqual(['id-4', 'id-3']);
    expect((await log.list('b', 10)).map((e) => e.ingestId)).toEqual(['id-2']);
    expect(await h.redis.get(`${h.keys.ingestLog('a')}:marker`)).toBe('1');
  });
});
