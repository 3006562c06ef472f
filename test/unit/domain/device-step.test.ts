/**
 * A device's step as its partition's owner decides it, with no Redis: statuses and events, the
 * newest measurement kept, contact and availability deadlines kept lazily, the "Contact restored"
 * change, and the state written and read back by the store's codec as it was decided.
 */
import { describe, expect, it } from 'vitest';
import {
  emptyDevice,
  runDeviceStep,
  settlePoints,
  type DeviceInput,
  type DeviceState,
  type DeviceValue,
} from '../../../src/domain/device-step.ts';
import type { PointRules } from '../../../src/domain/point-step.ts';
import { decodeDeviceState, stateWrites } from '../../../src/state/device-state-codec.ts';

// WARNING above 25, CRITICAL above 30 (outcomes per previous rule -1, 0, 1, hysteresis 1).
const RULES: PointRules = {
  statuses: ['WARNING', 'CRITICAL'],
  descriptions: ['Above 25 °C', 'Overheating'],
  rulesId: 'r1',
  suppressed: false,
  sensorType: 'tempC',
};

function outcomesFor(v: number): number[] {
  const fresh = v > 30 ? 1 : v > 25 ? 0 : -1;
  return [fresh, v > 24 ? Math.max(fresh, 0) : fresh, v > 29 ? 1 : fresh];
}

const value = (timeMs: number, v: number): DeviceValue => ({
  sensor: 'Temperature',
  timeMs,
  offsetNs: 0,
  valueJson: JSON.stringify(v),
  currentValue: `${v.toFixed(1)} °C`,
  outcomes: outcomesFor(v),
  receivedMs: timeMs,
  number: v,
});

const input = (contactMs: number, values: DeviceValue[], timeoutMs = 60_000): DeviceInput => ({
  env: 'e1',
  device: 'd1',
  contactMs,
  timeoutMs,
  rules: new Map([['Temperature', RULES]]),
  values,
  tick: false,
  allPoints: true,
});

/** Runs a step and settles the state, as the store does once the step's writes landed. */
function step(state: DeviceState, i: DeviceInput, nowMs = i.contactMs) {
  const outcome = runDeviceStep(state, i, nowMs);
  settlePoints(state);
  return outcome;
}

describe('device step', () => {
  it('records a first contact, with its deadline, and creates events on status changes only', () => {
    const state = emptyDevice();
    const first = step(state, input(1_000, [value(900, 20), value(950, 26)]));
    expect(first.firstContact).toBe(true);
    expect(first.deadline).toBe(61_000);
    expect(first.fieldWrites.lastContactMs).toBe(1_000);
    expect(first.applied).toEqual(['SUCCESS', 'WARNING']);
    expect(first.changes.map((c) => [c.status, c.atMs, c.event !== null])).toEqual([['WARNING', 950, true]]);

    // Still above 24 (hysteresis): WARNING kept, no change; contact moves, the deadline does not.
    const second = step(state, input(2_000, [value(1_900, 24.5)]));
    expect(second.firstContact).toBe(false);
    expect(second.applied).toEqual(['WARNING']);
    expect(second.changes).toEqual([]);
    expect(second.deadline).toBeNull();
    expect(second.fieldWrites.lastContactMs).toBe(2_000);
  });

  it('keeps the newest measurement: an older value is history only', () => {
    const state = emptyDevice();
    step(state, input(1_000, [value(1_000, 31)]));
    const late = step(state, input(2_000, [value(500, 20)]));
    expect(late.applied).toEqual([null]);
    expect(late.changes).toEqual([]);
    expect(state.points.get('Temperature')?.record?.status).toBe('CRITICAL');
  });

  it('restores a lost contact with the next payload, and writes the deadline again', () => {
    const state = emptyDevice();
    step(state, input(1_000, [value(1_000, 20)]));
    state.fields.lost = true; // as the scheduler's marking leaves it
    const back = step(state, input(100_000, [value(100_000, 20)]));
    expect(back.contactRestored).toBe(true);
    expect(back.changes.map((c) => [c.sensor, c.status])).toEqual([['', 'SUCCESS']]);
    expect(back.fieldWrites.lost).toBe(false);
    expect(back.deadline).toBe(160_000);
  });

  it('brings the deadline forward for a shorter timeout', () => {
    const state = emptyDevice();
    step(state, input(1_000, [value(1_000, 20)], 600_000));
    const shorter = step(state, input(2_000, [value(2_000, 20)], 60_000));
    expect(shorter.deadline).toBe(62_000);
  });

  it('stores what it decided so that the store reads back the same state', () => {
    const state = emptyDevice();
    step(state, input(1_000, [value(1_000, 26)]));
    const decided = emptyDevice();
    const outcome = runDeviceStep(decided, input(1_000, [value(1_000, 26)]), 1_000);
    const hash: Record<string, Buffer> = {};
    for (const fields of stateWrites(decided, outcome, 'v1.0'))
      for (let i = 0; i < fields.length; i += 2) {
        const v = fields[i + 1]!;
        hash[fields[i] as string] = Buffer.isBuffer(v) ? v : Buffer.from(v);
      }
    settlePoints(decided);
    const read = decodeDeviceState('e1', 'd1', hash);
    expect(read.version).toBe('v1.0');
    expect(read.state.fields).toEqual(state.fields);
    expect(read.state.points.get('Temperature')?.record).toEqual(state.points.get('Temperature')?.record);
    expect(read.state.points.get('Temperature')?.valueJson).toBe('26');
  });
});
