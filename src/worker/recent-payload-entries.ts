/**
 * Which payloads of a step its devices keep as recent payloads, and their entries
 * (recent-payloads/), handed to the writer once the step's acknowledgement landed.
 */
import type { IngestLogRecord } from '../ingest/ingest-log.ts';
import {
  encodeRecentPayload,
  RECENT_PAYLOADS_MAX_BYTES,
  STATUS_INDEX,
  type StatusList,
} from '../recent-payloads/recent-payload-codec.ts';
import type { RecentPayloadKeys } from '../recent-payloads/recent-payload-keys.ts';
import type { KeptPayloads } from '../recent-payloads/recent-payload-writer.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import type { ConvertedDevice } from './convert.ts';
import type { ResolvedReading } from './resolve.ts';

/**
 * The entries that keep the recent payloads of a step's devices: the newest `count` readings of
 * each device, with the outcome of their submission (`entries`, the step's ingestion-log records)
 * and the statuses `converted` gave their values. Readings whose device has no definition parser
 * (preparseronly) are kept too: their payload is what the pre-parser made.
 */
export function recentPayloadEntries(
  keys: RecentPayloadKeys,
  count: number,
  resolved: readonly ResolvedReading[],
  converted: readonly ConvertedDevice[],
  entries: readonly IngestLogRecord[],
): KeptPayloads {
  const out: KeptPayloads = new Map();
  if (count <= 0 || resolved.length === 0) return out;
  const kept = new Map<DeviceRecord, ResolvedReading[]>();
  for (const r of resolved) {
    const list = kept.get(r.device);
    if (!list) kept.set(r.device, [r]);
    else {
      list.push(r);
      if (list.length > count) list.shift();
    }
  }
  const statuses = statusesOf(converted);
  const outcomeOf = new Map<string, IngestLogRecord>(entries.map((e) => [e.ingestId, e]));
  const maxBytes = Math.floor(RECENT_PAYLOADS_MAX_BYTES / count);
  for (const [device, readings] of kept) {
    const env = readings[0]!.item.env;
    out.set(keys.recentPayloads(env, device.deviceName), {
      env,
      device: device.deviceName,
      texts: readings.map((r) =>
        encodeRecentPayload(
          {
            item: r.item,
            payload: r.payloadStr,
            outcome: outcomeOf.get(r.item.id),
            statuses: statuses.get(r),
          },
          maxBytes,
        ),
      ),
    });
  }
  return out;
}

/**
 * The statuses of the values of the step's readings, by reading: names and status indexes in turn
 * (of every reading: nearly all of them are kept, and asking which costs more than it saves).
 */
function statusesOf(converted: readonly ConvertedDevice[]): Map<ResolvedReading, StatusList> {
  const out = new Map<ResolvedReading, StatusList>();
  for (const device of converted) {
    for (const v of device.values) {
      const s = out.get(v.reading);
      if (s) s.push(v.sensor, STATUS_INDEX[v.status]);
      else out.set(v.reading, [v.sensor, STATUS_INDEX[v.status]]);
    }
  }
  return out;
}
