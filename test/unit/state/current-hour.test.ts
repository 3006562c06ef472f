import { describe, expect, it } from 'vitest';
import { currentHourOf } from '../../../src/state/read-state.ts';

const H = 3_600_000;
const NOW = 100 * H + 1234;
const state = (fields: Record<string, string>) => ({ fields, suppressed: {} });

describe('currentHourOf', () => {
  it('gives the kept hour as a last24Hours bucket when it is the hour of now', () => {
    const bucket = currentHourOf(state({ 'T|h': '100 3 17.300000000000001 -3 20.100000000000001' }), 'T', NOW);
    expect(bucket).toEqual({
      sUTC: 100 * 3600,
      eUTC: 101 * 3600,
      count: 3,
      total: 17.3,
      max: 20.1,
      min: -3,
      avg: 17.3 / 3,
    });
  });

  it('says there is nothing this hour when the current value is from an earlier hour', () => {
    expect(currentHourOf(state({ 'T|h': '99 1 5 5 5', 'T|u': String(99 * H + 5) }), 'T', NOW)).toBeNull();
    expect(currentHourOf(state({}), 'T', NOW)).toBeNull();
  });

  it('cannot tell (undefined) when the current value is from this hour but no hour is kept with it', () => {
    expect(currentHourOf(state({ 'T|u': String(100 * H) }), 'T', NOW)).toBeUndefined();
    expect(currentHourOf(state({ 'T|u': String(100 * H), 'T|h': 'garbled' }), 'T', NOW)).toBeUndefined();
  });
});
