import { describe, expect, it } from 'vitest';
import { currentHourOf } from '../../../src/state/read-state.ts';

const H = 3_600_000;
const NOW = 100 * H + 1234;

/** Field h as the state script writes it: six little-endian doubles. */
function hour(...numbers: number[]): Buffer {
  const b = Buffer.alloc(8 * numbers.length);
  numbers.forEach((n, i) => b.writeDoubleLE(n, 8 * i));
  return b;
}
const state = (fields: Record<string, string>, hours: Record<string, Buffer> = {}) => ({
  fields,
  suppressed: {},
  hours,
});

describe('currentHourOf', () => {
  it('gives the kept hour as a last24Hours bucket when it is the hour of now', () => {
    const total = 20.1 + 0.2 + -3;
    expect(currentHourOf(state({}, { T: hour(100, 3, total, -3, 20.1, 0) }), 'T', NOW)).toEqual({
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
    expect(
      currentHourOf(state({ 'T|u': String(99 * H + 5) }, { T: hour(99, 1, 5, 5, 5, 0) }), 'T', NOW),
    ).toBeNull();
    expect(currentHourOf(state({}), 'T', NOW)).toBeNull();
  });

  it('cannot tell (undefined) when the current value is from this hour but no hour is kept with it', () => {
    expect(currentHourOf(state({ 'T|u': String(100 * H) }), 'T', NOW)).toBeUndefined();
    expect(
      currentHourOf(state({ 'T|u': String(100 * H) }, { T: Buffer.from('garbled') }), 'T', NOW),
    ).toBeUndefined();
  });

  it('cannot tell (undefined) when a value of this hour came that did not become current', () => {
    expect(currentHourOf(state({}, { T: hour(100, 3, 6, 1, 3, 1) }), 'T', NOW)).toBeUndefined();
  });
});
