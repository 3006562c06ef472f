import { describe, expect, it } from 'vitest';
import { createHistoryWriter, type ValuePoint } from '../../src/history/history-writer.ts';
import type { InfluxClient } from '../../src/history/influx-client.ts';
import { queryLast24Hours } from '../../src/history/last-24-hours.ts';
import {
  CLOSED_HOURS_MAX_AGE_MS,
  createLast24HoursReader,
  type ReaderItem,
} from '../../src/history/last-24-hours-reader.ts';
import { createLogger } from '../../src/log/logger.ts';
import { freshHistoryDatabase, valuePoint } from '../support/history.ts';

const H = 3_600_000;
const CURRENT = Date.UTC(2026, 10, 20, 12);
const NOW = CURRENT + 30 * 60_000;
const d1 = { device: 'd1', sensor: 'Temperature' };
const d2 = { device: 'd2', sensor: 'Temperature' };

async function history() {
  const influx = await freshHistoryDatabase();
  const writer = createHistoryWriter({ influx, log: createLogger('silent') });
  const write = (...values: Partial<ValuePoint>[]) =>
    writer.write({ values: values.map((v) => valuePoint(v)), events: [], contacts: [] });
  return { influx, write };
}

/** The real client, counting the queries it sends. */
function counting(influx: InfluxClient): InfluxClient & { queries: number } {
  const counted = {
    database: influx.database,
    queries: 0,
    ping: () => influx.ping(),
    write: influx.write.bind(influx),
    query: (...args: Parameters<InfluxClient['query']>) => {
      counted.queries++;
      return influx.query(...args);
    },
  };
  return counted;
}

describe('last24Hours reader', () => {
  it('gives the buckets queryLast24Hours gives, from the cache as from InfluxDB', async () => {
    const { influx, write } = await history();
    await write(
      { timeMs: CURRENT - 23 * H, value: 50 },
      { timeMs: CURRENT - 2 * H + 5, value: 1 },
      { timeMs: CURRENT - 2 * H + 6, value: 2.5 },
      { timeMs: CURRENT - 1, value: 5 },
      { timeMs: CURRENT + 1, value: 7 },
      { timeMs: CURRENT + 2, value: 0.1, device: 'd2' },
      { timeMs: CURRENT, value: 'open', sensor: 'Label', sensorType: 'string', dataType: 'string' },
    );
    const items = [d1, d2, { device: 'd1', sensor: 'Label' }, { device: 'd1', sensor: 'Nothing' }];
    const expected = await queryLast24Hours(influx, 'demo', items, NOW);
    const read = createLast24HoursReader({ influx });
    expect(await read('demo', items, NOW)).toEqual(expected);
    expect(await read('demo', items, NOW + 1000)).toEqual(expected);
    expect(expected.get('d1|Temperature')).toHaveLength(4);
  });

  it(`shows a late value for a closed hour within ${CLOSED_HOURS_MAX_AGE_MS / 1000} s, a current-hour value at once`, async () => {
    const { influx, write } = await history();
    await write({ timeMs: CURRENT - H + 10, value: 20 }, { timeMs: CURRENT + 10, value: 30 });
    const read = createLast24HoursReader({ influx });
    const counts = async (nowMs: number) =>
      ((await read('demo', [d1], nowMs)).get('d1|Temperature') ?? []).map((b) => b.count);
    expect(await counts(NOW)).toEqual([1, 1]);

    await write({ timeMs: CURRENT - H + 20, value: 21 }, { timeMs: CURRENT + 20, value: 31 });
    expect(await counts(NOW + 1000)).toEqual([1, 2]);
    expect(await counts(NOW + CLOSED_HOURS_MAX_AGE_MS - 1)).toEqual([1, 2]);
    expect(await counts(NOW + CLOSED_HOURS_MAX_AGE_MS)).toEqual([2, 2]);
  });

  it('asks again for the closed hours of an item whose history version changed, only for it', async () => {
    const { influx, write } = await history();
    await write(
      { timeMs: CURRENT - H + 10, value: 20 },
      { timeMs: CURRENT - H + 10, value: 1, device: 'd2' },
    );
    const client = counting(influx);
    const read = createLast24HoursReader({ influx: client });
    const counts = async (item: ReaderItem) =>
      (await read('demo', [item], NOW)).get(`${item.device}|Temperature`)?.map((b) => b.count);
    expect(await counts({ ...d1, current: null, version: 3 })).toEqual([1]);
    expect(await counts({ ...d2, current: null, version: 0 })).toEqual([1]);
    await write({ timeMs: CURRENT - 2 * H, value: 19 }, { timeMs: CURRENT - 2 * H, value: 2, device: 'd2' });
    const queries = client.queries;
    expect(await counts({ ...d1, current: null, version: 3 })).toEqual([1]);
    expect(await counts({ ...d2, current: null, version: 0 })).toEqual([1]);
    expect(client.queries).toBe(queries);
    expect(await counts({ ...d1, current: null, version: 4 })).toEqual([1, 1]);
    expect(client.queries).toBe(queries + 1);
    expect(await counts({ ...d2, current: null, version: 0 })).toEqual([1]);
  });

  it('recomputes the closed hours when the hour rolls over', async () => {
    const { influx, write } = await history();
    await write({ timeMs: CURRENT - 10, value: 20 });
    const read = createLast24HoursReader({ influx });
    expect((await read('demo', [d1], CURRENT - 5)).get('d1|Temperature')).toHaveLength(1);
    // Measured before the hour rolled over, written after it.
    await write({ timeMs: CURRENT - 1, value: 22 });
    const after = (await read('demo', [d1], CURRENT + 1000)).get('d1|Temperature');
    expect(after).toEqual([expect.objectContaining({ sUTC: (CURRENT - H) / 1000, count: 2, total: 42 })]);
  });

  it('keeps at most maxEntries data points, dropping the oldest', async () => {
    const { influx, write } = await history();
    await write({ timeMs: CURRENT - H, value: 1 }, { timeMs: CURRENT - H, value: 1, device: 'd2' });
    const read = createLast24HoursReader({ influx, maxEntries: 1 });
    await read('demo', [d1], NOW);
    await read('demo', [d2], NOW);
    await write({ timeMs: CURRENT - H + 1, value: 2 }, { timeMs: CURRENT - H + 1, value: 2, device: 'd2' });
    const count = async (item: typeof d1) =>
      (await read('demo', [item], NOW + 1000)).get(`${item.device}|Temperature`)?.[0]?.count;
    expect(await count(d2)).toBe(1); // still cached
    expect(await count(d1)).toBe(2); // dropped, so read again
  });

  it('serves requests that arrive together with one query, and never reuses one that started earlier', async () => {
    const { influx, write } = await history();
    await write({ timeMs: CURRENT + 1, value: 1 });
    const client = counting(influx);
    const read = createLast24HoursReader({ influx: client });
    const items = Array.from({ length: 10 }, (_, i) => ({ device: `d${i}`, sensor: 'Temperature' }));
    const answers = await Promise.all(items.map((item) => read('demo', [item], NOW)));
    expect(client.queries).toBe(1);
    expect(answers[1]?.get('d1|Temperature')?.[0]?.count).toBe(1);

    // The first query is on its way when the value is written; the second request must not share it.
    const first = read('demo', [d1], NOW);
    await write({ timeMs: CURRENT + 2, value: 2 });
    const second = read('demo', [d1], NOW);
    expect((await second).get('d1|Temperature')?.[0]?.count).toBe(2);
    await first;
  });

  it('takes a current hour the caller knows from state, and asks InfluxDB only for the closed hours', async () => {
    const { influx, write } = await history();
    await write({ timeMs: CURRENT - H + 10, value: 20 }, { timeMs: CURRENT + 10, value: 30 });
    const client = counting(influx);
    const read = createLast24HoursReader({ influx: client });
    const sUTC = CURRENT / 1000;
    const current = { sUTC, eUTC: sUTC + 3600, count: 2, total: 61, max: 31, min: 30, avg: 30.5 };
    const buckets = async (item: ReaderItem, nowMs = NOW) =>
      (await read('demo', [item], nowMs)).get('d1|Temperature')?.map((b) => [b.sUTC, b.count]);
    // Not what InfluxDB holds for the current hour (one value): the state's bucket is taken as given.
    expect(await buckets({ ...d1, current })).toEqual([
      [(CURRENT - H) / 1000, 1],
      [sUTC, 2],
    ]);
    expect(await buckets({ ...d1, current: null }, NOW + 1)).toEqual([[(CURRENT - H) / 1000, 1]]);
    expect(client.queries).toBe(1);
    // Unknown: InfluxDB is asked for the current hour.
    expect(await buckets(d1, NOW + 2)).toEqual([
      [(CURRENT - H) / 1000, 1],
      [sUTC, 1],
    ]);
    expect(client.queries).toBe(2);
  });
});
