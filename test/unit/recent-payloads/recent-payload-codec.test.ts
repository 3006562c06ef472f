import { describe, expect, it } from 'vitest';
import type { IngestItem } from '../../../src/domain/ingest-item.ts';
import { createIngestId } from '../../../src/ingest/ingest-id.ts';
import type { IngestLogRecord } from '../../../src/ingest/ingest-log.ts';
import {
  encodeRecentPayload,
  readRecentPayload,
  STATUS_INDEX,
  type StatusList,
} from '../../../src/recent-payloads/recent-payload-codec.ts';

const MAX_BYTES = 3276; // 64 KiB / 20, a device's share at the default count

function item(id: string, body: string, bodyIsHex = false): IngestItem {
  return { id, env: 'acme', receivedMs: 1_795_000_000_000, body, bodyIsHex } as IngestItem;
}

/** `payload` (what the parser got out of `it`) stored within `maxBytes` and read back. */
function roundTrip(
  it: IngestItem,
  payload = it.body,
  o: { outcome?: Partial<IngestLogRecord>; statuses?: StatusList; maxBytes?: number } = {},
) {
  const maxBytes = o.maxBytes ?? MAX_BYTES;
  const text = encodeRecentPayload(
    { item: it, payload, outcome: o.outcome as IngestLogRecord | undefined, statuses: o.statuses },
    maxBytes,
  );
  expect(Buffer.byteLength(text)).toBeLessThanOrEqual(maxBytes);
  return readRecentPayload(text);
}

describe('recent payload codec', () => {
  it('keeps payload, raw body, outcome and statuses, whatever the texts hold', () => {
    const a = '{"t": "line\\nbreak", "q": "\\"quoted\\""}';
    const ra = roundTrip(item('i1', a), a, {
      outcome: { ingestId: 'i1', outcome: 'partial', code: 'VALUE_DROPPED', message: 'x'.repeat(400) },
      statuses: ['Temperature', STATUS_INDEX.WARNING, '__proto__', STATUS_INDEX.CRITICAL],
    });
    expect(ra).toMatchObject({ ingestId: 'i1', outcome: 'partial', code: 'VALUE_DROPPED', payload: a });
    expect(ra!.message).toBe(`${'x'.repeat(300)}…`);
    expect(ra!.raw).toBeUndefined();
    expect(Object.entries(ra!.statuses)).toEqual([
      ['Temperature', 'WARNING'],
      ['__proto__', 'CRITICAL'],
    ]);
    const body = 'a raw\nbody with "quotes" 💡';
    const rb = roundTrip(item('i2', body), 'converted\nby a pre-parser ✓');
    expect(rb).toMatchObject({
      ingestId: 'i2',
      outcome: 'accepted',
      payload: 'converted\nby a pre-parser ✓',
      raw: body,
    });
    expect(roundTrip(item('i3', '00ff10', true), '')).toMatchObject({
      payload: '',
      raw: '00ff10',
      hex: true,
      statuses: {},
    });
  });

  it('leaves out of the header what the ingest id and the defaults tell: one line of few bytes', () => {
    const receivedMs = 1_795_000_000_123;
    const it = { ...item(createIngestId(receivedMs), '{"t":21}'), receivedMs };
    const text = encodeRecentPayload(
      { item: it, payload: it.body, outcome: undefined, statuses: ['Temperature', STATUS_INDEX.WARNING] },
      MAX_BYTES,
    );
    expect(text).toBe(`{"i":"${it.id}","s":["Temperature",2]}\n{"t":21}`);
    expect(readRecentPayload(text)).toMatchObject({
      receivedMs,
      ingestId: it.id,
      outcome: 'accepted',
      code: null,
      statuses: { Temperature: 'WARNING' },
    });
    // An id that does not hold the receive time: the time is written.
    expect(roundTrip(item('i9', '{}'))!.receivedMs).toBe(1_795_000_000_000);
  });

  it('shortens what does not fit, never halving a character, and says how long it was', () => {
    const long = `{"note":"${'é💡'.repeat(20_000)}"}`;
    const r = roundTrip(item('i1', `raw ${long}`), long);
    expect(r!.payloadBytes).toBe(Buffer.byteLength(long));
    expect(r!.rawBytes).toBe(Buffer.byteLength(`raw ${long}`));
    expect(long.startsWith(r!.payload)).toBe(true);
    expect(`raw ${long}`.startsWith(r!.raw!)).toBe(true);
    expect(r!.payload.isWellFormed() && r!.raw!.isWellFormed()).toBe(true);
    expect(r!.payload.length).toBeGreaterThan(200);
    // Every way a cut can fall: after one byte more of text each time.
    for (let shift = 0; shift < 4; shift++) {
      const text = `${'a'.repeat(shift)}${'💡'.repeat(5000)}`;
      const s = roundTrip(item('i2', text));
      expect(text.startsWith(s!.payload) && s!.payload.isWellFormed()).toBe(true);
    }
  });

  it('gives up the statuses, not the payload, of a definition with too many data points to fit', () => {
    const statuses = Array.from({ length: 400 }, (_, i) => [`Sensor${i}`, STATUS_INDEX.SUCCESS]).flat();
    const r = roundTrip(item('i1', '{"a":1}'), '{"a":1}', { statuses, maxBytes: 1024 });
    expect(r).toMatchObject({ payload: '{"a":1}', statuses: {} });
  });

  it('reads no entry of an older Vigil (one JSON text) nor any that is not an entry', () => {
    const older = JSON.stringify({
      t: 5,
      i: 'i0',
      o: 'rejected',
      c: 'PARSER_ERROR',
      p: '{"a":1}',
      s: { T: 'ERROR' },
    });
    expect(readRecentPayload(older)).toBeNull();
    expect(readRecentPayload('not json')).toBeNull();
    expect(readRecentPayload('[1]\n{}')).toBeNull();
    expect(readRecentPayload('{"t":1}\n{}')).toBeNull();
  });
});
