import { describe, expect, it } from 'vitest';
import type { KeptHour, PointRecord } from '../../../src/state/point-record.ts';
import {
  currentHourOf,
  planStateRead,
  stateFromQueued,
  type DeviceStateHash,
} from '../../../src/state/read-state.ts';

const H = 3_600_000;
const NOW = 100 * H + 1234;

/** A state whose data point T has its current value at `updatedMs` and `hour` kept with it. */
function state(updatedMs: number, hour: KeptHour | null): DeviceStateHash {
  const record: PointRecord = {
    updatedMs,
    offsetNs: 0,
    rule: -1,
    rulesId: 'r',
    status: 'SUCCESS',
    lastSuccessMs: updatedMs,
    statusSinceMs: updatedMs,
    hour,
    receivedMs: null,
    held: [],
    shownValue: '',
  };
  return {
    values: new Map([['T', '1']]),
    points: new Map([['T', record]]),
    suppressed: new Map(),
    historyVersion: 0,
  };
}
const kept = (hour: number, count: number, total: number, min: number, max: number, late = false) => ({
  hour,
  count,
  total,
  min,
  max,
  late,
});
const none: DeviceStateHash = {
  values: new Map(),
  points: new Map(),
  suppressed: new Map(),
  historyVersion: 0,
};

describe('currentHourOf', () => {
  it('gives the kept hour as a last24Hours bucket when it is the hour of now', () => {
    const total = 20.1 + 0.2 + -3;
    expect(currentHourOf(state(100 * H, kept(100, 3, total, -3, 20.1)), 'T', NOW)).toEqual({
      sUTC: 100 * 3600,
      eUTC: 101 * 3600,
      count: 3,
      total,
      max: 20.1,
      min: -3,
      avg: total / 3,
    });
  });

  it('says there is nothing this hour when the current value is from an earlier hour', () => {
    expect(currentHourOf(state(99 * H + 5, kept(99, 1, 5, 5, 5)), 'T', NOW)).toBeNull();
    expect(currentHourOf(none, 'T', NOW)).toBeNull();
  });

  it('cannot tell (undefined) when the current value is from this hour but no hour is kept with it', () => {
    expect(currentHourOf(state(100 * H, null), 'T', NOW)).toBeUndefined();
  });

  it('cannot tell (undefined) when a value of this hour came that did not become current', () => {
    expect(currentHourOf(state(100 * H, kept(100, 3, 6, 1, 3, true)), 'T', NOW)).toBeUndefined();
  });

  it('refuses a packed field of an unknown layout rather than read it as no state', () => {
    const replies = [[Buffer.from('1'), Buffer.from('garbled')], {}];
    expect(() => stateFromQueued(planStateRead(['T']), () => replies.shift())).toThrow(
      expect.objectContaining({ code: 'STATE_LAYOUT_UNKNOWN', status: 503 }),
    );
  });
});
