import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import { createHistoryWriter } from '../../src/history/history-writer.ts';
import { exportValues, streamExport, type ExportedValue } from '../../src/history/export-values.ts';
import { createLogger } from '../../src/log/logger.ts';
import { rollupSelect } from '../../src/history/schema.ts';
import { msTime } from '../../src/history/influxql.ts';
import { freshHistoryDatabase, valuePoint } from '../support/history.ts';

const T0 = Date.UTC(2026, 10, 1);
const log = createLogger('silent');

/** Live heap after a full collection (what the export retains, not the garbage it made). */
function retainedHeap(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

describe('exportValues', () => {
  it('streams 100,000 values oldest first in pages with bounded memory', async () => {
    const influx = await freshHistoryDatabase();
    const writer = createHistoryWriter({ influx, log });
    const n = 100_000;
    for (let start = 0; start < n; start += 25_000) {
      await writer.write({
        values: Array.from({ length: 25_000 }, (_, i) =>
          valuePoint({ timeMs: T0 + (start + i) * 1000, value: start + i }),
        ),
        events: [],
        contacts: [],
      });
    }
    const heapBefore = retainedHeap();
    let count = 0;
    let previous = -Infinity;
    let peakHeap = heapBefore;
    for await (const v of exportValues(influx, {
      env: 'demo',
      device: 'd1',
      sensor: 'Temperature',
      dataType: 'temperature',
    })) {
      expect(v.timeMs).toBeGreaterThan(previous);
      expect(v.value).toBe(count);
      previous = v.timeMs;
      count++;
      if (count % 20_000 === 0) peakHeap = Math.max(peakHeap, retainedHeap());
    }
    expect(count).toBe(n);
    // Holding 100,000 rows would retain tens of MB; one 5,000-row page is about one MB.
    expect(peakHeap - heapBefore).toBeLessThan(8 * 1024 * 1024);
  });

  it('bounds the range inclusively in ms and pages across values of equal time in two series', async () => {
    const influx = await freshHistoryDatabase();
    const writer = createHistoryWriter({ influx, log });
    // After a definition change a data point can have two series (sensorType differs) with equal times.
    await writer.write({
      values: [
        valuePoint({ timeMs: T0, value: 1 }),
        valuePoint({ timeMs: T0 + 1, value: 2 }),
        valuePoint({ timeMs: T0 + 1, value: 3, sensorType: 'number' }),
        valuePoint({ timeMs: T0 + 1, value: 4, sensorType: 'other' }),
        valuePoint({ timeMs: T0 + 2, value: 5 }),
        valuePoint({ timeMs: T0 + 3, value: 6, offsetNs: 999_999 }),
        valuePoint({ timeMs: T0 + 4, value: 7 }),
      ],
      events: [],
      contacts: [],
    });
    const q = { env: 'demo', device: 'd1', sensor: 'Temperature', dataType: 'temperature' as const };
    const all: ExportedValue[] = [];
    const n = await streamExport(influx, { ...q, pageSize: 2 }, (v) => {
      all.push(v);
    });
    expect(n).toBe(7);
    expect(all.map((v) => v.value).sort()).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(all.map((v) => v.timeMs)).toEqual([T0, T0 + 1, T0 + 1, T0 + 1, T0 + 2, T0 + 3, T0 + 4]);

    const bounded: ExportedValue[] = [];
    await streamExport(influx, { ...q, startMs: T0 + 2, endMs: T0 + 3 }, (v) => {
      bounded.push(v);
    });
    expect(bounded).toEqual([
      { timeMs: T0 + 2, value: 5 },
      { timeMs: T0 + 3, value: 6 },
    ]);
  });

  it('yields nothing for a data point without history', async () => {
    const influx = await freshHistoryDatabase();
    const got = [];
    for await (const v of exportValues(influx, { env: 'demo', device: 'x', sensor: 'y', dataType: 'string' }))
      got.push(v);
    expect(got).toEqual([]);
  });

  it('exports hourly averages from the rollups for hours whose raw values have expired, then the raw values', async () => {
    const influx = await freshHistoryDatabase();
    const writer = createHistoryWriter({ influx, log });
    const H = 3_600_000;
    const h0 = Date.UTC(2026, 9, 1, 10);
    const values = [0, 1, 2].flatMap((h) =>
      [10, 20, 30].map((v, i) => valuePoint({ timeMs: h0 + h * H + i * 60_000, value: v + h })),
    );
    await writer.write({ values, events: [], contacts: [] });
    // Backfill the rollups as the continuous query would have, then expire the first two raw hours.
    const range = `time >= ${msTime(h0)} AND time < ${msTime(h0 + 3 * H)}`;
    await influx.query(rollupSelect(influx.database, { into: true, where: range }));
    await influx.query(`DELETE FROM "readings" WHERE time < ${msTime(h0 + 2 * H)}`);

    const q = { env: 'demo', device: 'd1', sensor: 'Temperature', dataType: 'temperature' as const };
    const got: ExportedValue[] = [];
    await streamExport(influx, q, (v) => {
      got.push(v);
    });
    expect(got).toEqual([
      { timeMs: h0, value: 20, hourly: true },
      { timeMs: h0 + H, value: 21, hourly: true },
      { timeMs: h0 + 2 * H, value: 12 },
      { timeMs: h0 + 2 * H + 60_000, value: 22 },
      { timeMs: h0 + 2 * H + 120_000, value: 32 },
    ]);
    const fromSecondHour: ExportedValue[] = [];
    await streamExport(influx, { ...q, startMs: h0 + H, endMs: h0 + 2 * H }, (v) => {
      fromSecondHour.push(v);
    });
    expect(fromSecondHour).toEqual([
      { timeMs: h0 + H, value: 21, hourly: true },
      { timeMs: h0 + 2 * H, value: 12 },
    ]);
  });
});
