import { describe, expect, it } from 'vitest';
import type { IngestLogRecord } from '../../../src/ingest/ingest-log.ts';
import {
  RECENT_PAYLOADS_MAX_BYTES,
  readRecentPayload,
} from '../../../src/recent-payloads/recent-payload-codec.ts';
import { recentPayloadKeys } from '../../../src/recent-payloads/recent-payload-keys.ts';
import type { ConvertedDevice } from '../../../src/worker/convert.ts';
import { recentPayloadEntries } from '../../../src/worker/recent-payload-entries.ts';
import type { ResolvedReading } from '../../../src/worker/resolve.ts';

const keys = recentPayloadKeys('vigil');
const d1 = { deviceName: 'd1' };
const d2 = { deviceName: 'd2' };

function reading(id: string, payloadStr: string, device = d1, body = payloadStr): ResolvedReading {
  return {
    item: { id, env: 'acme', receivedMs: 1_795_000_000_000, body },
    payloadStr,
    device,
  } as unknown as ResolvedReading;
}

/** What is kept of each device's readings, read back, newest first as LRANGE gives them. */
function keptAndRead(
  readings: ResolvedReading[],
  o: {
    statuses?: [ResolvedReading, string, string][];
    outcomes?: Partial<IngestLogRecord>[];
    count?: number;
  } = {},
) {
  const count = o.count ?? 20;
  const converted = [
    { values: (o.statuses ?? []).map(([r, sensor, status]) => ({ reading: r, sensor, status })) },
  ] as unknown as ConvertedDevice[];
  const kept = recentPayloadEntries(
    keys,
    count,
    readings,
    converted,
    (o.outcomes ?? []) as IngestLogRecord[],
  );
  const out = new Map<string, ReturnType<typeof readRecentPayload>[]>();
  for (const [key, { env, device, texts }] of kept) {
    expect(key).toBe(keys.recentPayloads(env, device));
    for (const t of texts)
      expect(Buffer.byteLength(t)).toBeLessThanOrEqual(RECENT_PAYLOADS_MAX_BYTES / count);
    out.set(
      device,
      [...texts].reverse().map((t) => readRecentPayload(t)),
    );
  }
  return out;
}

describe('recent payload entries', () => {
  it('keeps the newest `count` readings of each device of a step', () => {
    const readings = Array.from({ length: 5 }, (_, i) => reading(`i${i}`, `{"n":${i}}`, i % 2 ? d2 : d1));
    const kept = keptAndRead(readings, { count: 2 });
    expect(kept.get('d1')!.map((r) => r!.ingestId)).toEqual(['i4', 'i2']);
    expect(kept.get('d2')!.map((r) => r!.ingestId)).toEqual(['i3', 'i1']);
  });

  it("keeps each reading with its own submission's outcome and the statuses its values got", () => {
    const a = reading('ia', '{"t":30}');
    const b = reading('ib', 'converted', d1, 'raw body');
    const kept = keptAndRead([a, b], {
      statuses: [
        [a, 'Temperature', 'WARNING'],
        [b, 'Temperature', 'SUCCESS'],
        [a, 'Humidity', 'CRITICAL'],
      ],
      outcomes: [{ ingestId: 'ib', outcome: 'partial', code: 'VALUE_DROPPED', message: 'dropped' }],
    });
    const [rb, ra] = kept.get('d1')!;
    expect(ra).toMatchObject({
      ingestId: 'ia',
      outcome: 'accepted',
      code: null,
      payload: '{"t":30}',
      statuses: { Temperature: 'WARNING', Humidity: 'CRITICAL' },
    });
    expect(rb).toMatchObject({
      ingestId: 'ib',
      outcome: 'partial',
      code: 'VALUE_DROPPED',
      payload: 'converted',
      raw: 'raw body',
      statuses: { Temperature: 'SUCCESS' },
    });
  });

  it('keeps none with a count of 0', () => {
    expect(keptAndRead([reading('i1', '{}')], { count: 0 }).size).toBe(0);
  });
});
