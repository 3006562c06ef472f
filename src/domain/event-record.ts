/**
 * The record of an event a state step creates: a data point's status change, or a device's contact
 * restored. Its id is deterministic (device, data point, time), so a replayed step cannot store it
 * twice; `ns` places its history point apart from every other event of the device created in the
 * same millisecond.
 */
import type { StatusChange } from './point-step.ts';
import type { EventRecord } from './types.ts';

export function eventOfChange(
  where: { env: string; device: string; displayName: string },
  change: StatusChange & { event: NonNullable<StatusChange['event']> },
  receivedMs: number,
  ns: number,
): EventRecord {
  const availability = change.sensor === '';
  return {
    id: change.event.id,
    env: where.env,
    deviceName: where.device,
    displayName: where.displayName,
    sensorName: availability ? 'availability' : change.sensor,
    sensorType: change.event.sensorType,
    sensorValue: JSON.parse(change.event.valueJson) as EventRecord['sensorValue'],
    eventStatus: change.status,
    eventCategory: availability ? 'Availability' : 'Sensors',
    eventMessage: change.event.message,
    receivedMs,
    ns,
  };
}

/**
 * Sub-millisecond offsets of events, unique per millisecond in this process: a device's events are
 * created by one process at a time (its partition's owner), so no two of them share a history
 * point. The last few milliseconds are remembered, as steps of several loops interleave.
 */
export function createEventSequence(): (ms: number) => number {
  const next = new Map<number, number>();
  return (ms) => {
    const n = next.get(ms) ?? 0;
    next.set(ms, n + 1);
    if (next.size > 64) next.delete(next.keys().next().value!);
    return n % 1_000_000;
  };
}
