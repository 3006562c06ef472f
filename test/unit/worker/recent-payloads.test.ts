import { describe, expect, it } from 'vitest';
import { createIngestId } from '../../../src/ingest/ingest-id.ts';
import type { IngestLogRecord } from '../../../src/ingest/ingest-log.ts';
import type { ConvertedDevice } from '../../../src/worker/convert.ts';
import {
  RECENT_PAYLOADS_MAX_BYTES,
  readRecentPayload,
  recentPayloadEntries,
  recentPayloadKeys,
} from '../../../src/worker/recent-payloads.ts';
import type { ResolvedReading } from '../../../src/worker/resolve.ts';

const keys = recentPayloadKeys('vigil');
const device = { deviceName: 'd1' };

function reading(id: string, payloadStr: string, body = payloadStr, bodyIsHex = false): ResolvedReading {
  return {
    item: { id, env: 'acme', receivedMs: 1_795_000_000_000, body, ...(bodyIsHex ? { bodyIsHex } : {}) },
    payloadStr,
    device,
  } as unknown as ResolvedReading;
}

/** What is kept of the readings, read back, newest first as LRANGE gives them. */
function storeAndRead(
  readings: ResolvedReading[],
  statuses: [ResolvedReading, string, string][] = [],
  outcomes: Partial<IngestLogRecord>[] = [],
  count = 20,
) {
  const converted = [
    { values: statuses.map(([r, sensor, status]) => ({ reading: r, sensor, status })) },
  ] as unknown as ConvertedDevice[];
  const kept = recentPayloadEntries(keys, count, readings, converted, outcomes as IngestLogRecord[]);
  expect([...kept.keys()]).toEqual([keys.recentPayloads('acme', 'd1')]);
  const texts = [...kept.values()][0]!.texts;
  for (const t of texts) expect(Buffer.byteLength(t)).toBeLessThanOrEqual(RECENT_PAYLOADS_MAX_BYTES / count);
  return texts.reverse().map((t) => readRecentPayload(t));
}

describe('recent payloads', () => {
  it('keeps payload, raw body, outcome and statuses, whatever the texts hold', () => {
    const a = reading('i1', '{"t": "line\\nbreak", "q": "\\"quoted\\""}');
    const b = reading('i2', 'converted\nby a pre-parser ✓', 'a raw\nbody with "quotes" 💡');
    const c = reading('i3', '', '00ff10', true);
    const [rc, rb, ra] = storeAndRead(
      [a, b, c],
      [
        [a, 'Temperature', 'WARNING'],
        [a, '__proto__', 'CRITICAL'],
        [b, 'CO2', 'SUCCESS'],
      ],
      [{ ingestId: 'i1', outcome: 'partial', code: 'VALUE_DROPPED', message: 'x'.repeat(400) }],
    );
    expect(ra).toMatchObject({
      ingestId: 'i1',
      outcome: 'partial',
      code: 'VALUE_DROPPED',
      payload: a.payloadStr,
    });
    expect(ra!.message).toBe(`${'x'.repeat(300)}…`);
    expect(ra!.raw).toBeUndefined();
    expect(Object.entries(ra!.statuses)).toEqual([
      ['Temperature', 'WARNING'],
      ['__proto__', 'CRITICAL'],
    ]);
    expect(rb).toMatchObject({
      ingestId: 'i2',
      outcome: 'accepted',
      payload: b.payloadStr,
      raw: b.item.body,
    });
    expect(rc).toMatchObject({ payload: '', raw: '00ff10', hex: true, statuses: {} });
  });

  it('leaves out of the header what the ingest id and the defaults tell: one line of few bytes', () => {
    const receivedMs = 1_795_000_000_123;
    const r = reading(createIngestId(receivedMs), '{"t":21}');
    (r.item as { receivedMs: number }).receivedMs = receivedMs;
    const converted = [
      { values: [{ reading: r, sensor: 'Temperature', status: 'WARNING' }] },
    ] as unknown as ConvertedDevice[];
    const [text] = [...recentPayloadEntries(keys, 20, [r], converted, []).values()][0]!.texts;
    expect(text).toBe(`{"i":"${r.item.id}","s":["Temperature",2]}\n{"t":21}`);
    expect(readRecentPayload(text!)).toMatchObject({
      receivedMs,
      ingestId: r.item.id,
      outcome: 'accepted',
      code: null,
      statuses: { Temperature: 'WARNING' },
    });
    // An id that does not hold the receive time: the time is written.
    const [other] = storeAndRead([reading('i9', '{}')]);
    expect(other!.receivedMs).toBe(1_795_000_000_000);
  });

  it('shortens what does not fit, never halving a character, and says how long it was', () => {
    const long = `{"note":"${'é💡'.repeat(20_000)}"}`;
    const [r] = storeAndRead([reading('i1', long, `raw ${long}`)]);
    expect(r!.payloadBytes).toBe(Buffer.byteLength(long));
    expect(r!.rawBytes).toBe(Buffer.byteLength(`raw ${long}`));
    expect(long.startsWith(r!.payload)).toBe(true);
    expect(`raw ${long}`.startsWith(r!.raw!)).toBe(true);
    expect(r!.payload.isWellFormed() && r!.raw!.isWellFormed()).toBe(true);
    expect(r!.payload.length).toBeGreaterThan(200);
    // Every way a cut can fall: after one byte more of text each time.
    for (let shift = 0; shift < 4; shift++) {
      const text = `${'a'.repeat(shift)}${'💡'.repeat(5000)}`;
      const [s] = storeAndRead([reading('i2', text)]);
      expect(text.startsWith(s!.payload) && s!.payload.isWellFormed()).toBe(true);
    }
  });

  it('keeps only the newest `count` of a step', () => {
    const readings = Array.from({ length: 5 }, (_, i) => reading(`i${i}`, `{"n":${i}}`));
    expect(storeAndRead(readings, [], [], 2).map((r) => r!.ingestId)).toEqual(['i4', 'i3']);
  });

  it('reads entries kept as one JSON text by the version before', () => {
    const old = JSON.stringify({
      t: 5,
      i: 'i0',
      o: 'rejected',
      c: 'PARSER_ERROR',
      p: '{"a":1}',
      r: 'raw',
      s: { T: 'ERROR' },
    });
    expect(readRecentPayload(old)).toMatchObject({
      receivedMs: 5,
      ingestId: 'i0',
      outcome: 'rejected',
      code: 'PARSER_ERROR',
      payload: '{"a":1}',
      raw: 'raw',
      statuses: { T: 'ERROR' },
    });
    expect(readRecentPayload('not json')).toBeNull();
  });
});
