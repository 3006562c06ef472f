import { describe, expect, it } from 'vitest';
import {
  blockOf,
  createHistoryWriter,
  MAX_BYTES_PER_WRITE,
  MAX_LINES_PER_WRITE,
  requestsOf,
  type HistoryBatch,
  type ValuePoint,
} from '../../../src/history/history-writer.ts';
import type { InfluxClient } from '../../../src/history/influx-client.ts';
import { createLogger } from '../../../src/log/logger.ts';

/** A fake of the InfluxDB port that records writes (the real server is in the integration tests). */
function recordingInflux(opts: { failOn?: number } = {}) {
  const writes: { lines: string[]; rp: string | undefined }[] = [];
  let active = 0;
  let maxActive = 0;
  const influx: InfluxClient = {
    database: 'db',
    ping: () => Promise.resolve(true),
    query: () => Promise.resolve([]),
    async write(lines, o) {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise((r) => setTimeout(r, 1));
      active--;
      if (writes.length === opts.failOn) throw new Error('boom');
      writes.push({ lines: lines.split('\n'), rp: o?.retentionPolicy });
    },
  };
  return { influx, writes, maxActive: () => maxActive };
}

const log = createLogger('silent');
const value = (i: number): ValuePoint => ({
  env: 'e',
  device: 'd',
  sensor: 's',
  sensorType: 'number',
  dataType: 'number',
  timeMs: 1000 + i,
  offsetNs: 0,
  value: i,
  status: 'SUCCESS',
});
const batch = (n: number, events = 0): HistoryBatch => ({
  values: Array.from({ length: n }, (_, i) => value(i)),
  contacts: [{ env: 'e', device: 'd', timeMs: 1000, offsetNs: 0 }],
  events: Array.from({ length: events }, (_, i) => ({
    id: `e${i}`,
    env: 'e',
    deviceName: 'd',
    displayName: 'D',
    sensorName: 's',
    sensorType: 'number',
    sensorValue: 1,
    eventStatus: 'WARNING' as const,
    eventCategory: 'Sensors' as const,
    eventMessage: 'm',
    receivedMs: 1000,
  })),
});

describe('createHistoryWriter', () => {
  it('sends values and contacts in one request to the raw policy', async () => {
    const { influx, writes } = recordingInflux();
    await createHistoryWriter({ influx, log }).write(batch(4999));
    expect(writes.map((w) => [w.rp, w.lines.length])).toEqual([['raw', 5000]]);
  });

  it('splits more than 5,000 lines into requests of even size sent together, and events to the long policy', async () => {
    const fake = recordingInflux();
    await createHistoryWriter({ influx: fake.influx, log }).write(batch(12_000, 2));
    const raw = fake.writes.filter((w) => w.rp === 'raw').map((w) => w.lines.length);
    // 12,000 values and a contact: as few requests as the limit allows, none near empty.
    expect(raw).toHaveLength(Math.ceil(12_001 / MAX_LINES_PER_WRITE));
    expect(raw.reduce((a, b) => a + b, 0)).toBe(12_001);
    expect(Math.max(...raw)).toBeLessThanOrEqual(MAX_LINES_PER_WRITE);
    expect(Math.max(...raw) - Math.min(...raw)).toBeLessThanOrEqual(raw.length);
    expect(fake.writes.filter((w) => w.rp === 'long').map((w) => w.lines.length)).toEqual([2]);
    expect(fake.maxActive()).toBe(fake.writes.length);
  });

  it('lets calls made meanwhile share one request (group commit)', async () => {
    const fake = recordingInflux();
    const writer = createHistoryWriter({ influx: fake.influx, log });
    await Promise.all([writer.write(batch(10)), writer.write(batch(10)), writer.write(batch(10))]);
    expect(fake.writes.map((w) => [w.rp, w.lines.length])).toEqual([['raw', 33]]);
    const first = writer.write(batch(10));
    await new Promise((r) => setImmediate(r)); // its request is in flight…
    const later = [writer.write(batch(5)), writer.write(batch(5))]; // …these two wait and go together
    await Promise.all([first, ...later]);
    expect(fake.writes.slice(1).map((w) => w.lines.length)).toEqual([11, 12]);
  });

  it('fails the whole write when any request fails', async () => {
    const { influx } = recordingInflux({ failOn: 1 });
    await expect(createHistoryWriter({ influx, log }).write(batch(6000))).rejects.toThrow('boom');
  });

  it('waits for writes in flight on close, refuses new ones after, and closes twice safely', async () => {
    const { influx, writes } = recordingInflux();
    const writer = createHistoryWriter({ influx, log });
    const pending = writer.write(batch(1));
    await writer.close();
    expect(writes).toHaveLength(1);
    await pending;
    await expect(writer.write(batch(1))).rejects.toThrow(/closed/);
    await writer.close();
  });

  it('also splits by size, so long string values never exceed InfluxDB body limits', () => {
    const big = 'x'.repeat(1024 * 1024);
    const lines = [big, big, big, big, big, big, big, big, big, big];
    const bodies = requestsOf([blockOf(lines.slice(0, 4)), blockOf(lines.slice(4))]);
    expect(bodies).toHaveLength(Math.ceil(Buffer.byteLength(lines.join('\n')) / MAX_BYTES_PER_WRITE));
    for (const b of bodies) expect(Buffer.byteLength(b)).toBeLessThanOrEqual(MAX_BYTES_PER_WRITE);
    expect(bodies.join('\n')).toBe(lines.join('\n'));
    expect(requestsOf([blockOf(['y'.repeat(MAX_BYTES_PER_WRITE * 2)])]).map((b) => b.length)).toEqual([
      MAX_BYTES_PER_WRITE * 2,
    ]);
  });

  it('splits unevenly long lines by lines first, then halves a part that is still too large', () => {
    const big = 'é'.repeat(1024 * 1024); // 2 MB of UTF-8 each
    const lines = [big, big, big, big, big, 'a', 'b', 'c'];
    const bodies = requestsOf([blockOf(lines)]);
    for (const b of bodies) expect(Buffer.byteLength(b)).toBeLessThanOrEqual(MAX_BYTES_PER_WRITE);
    expect(bodies.join('\n')).toBe(lines.join('\n'));
    expect(bodies.length).toBeLessThanOrEqual(3);
  });
});
