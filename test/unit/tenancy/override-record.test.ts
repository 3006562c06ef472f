import { describe, expect, it } from 'vitest';
import type { ThresholdSet } from '../../../src/domain/types.ts';
import { decodeOverrides, decodeThresholds, encodeOverride } from '../../../src/tenancy/records.ts';

const SET: ThresholdSet = {
  rules: [{ status: 'WARNING', above: 800, forMs: 600_000 }],
  hysteresis: 25,
  stale: { afterMs: 1_800_000, status: 'WARNING' },
};

describe('threshold override records', () => {
  it('keep the revision beside the set, and give the worker the set alone', () => {
    const hash = { CO2: encodeOverride(SET, 3) };
    expect(JSON.parse(hash.CO2)).toEqual({ ...SET, revision: 3 });
    expect(decodeOverrides(hash).get('CO2')).toEqual({ set: SET, revision: 3 });
    expect(decodeThresholds(hash)).toEqual(new Map([['CO2', SET]]));
  });

  it('count an override stored before revisions as revision 1', () => {
    const hash = { CO2: JSON.stringify(SET) };
    expect(decodeOverrides(hash).get('CO2')).toEqual({ set: SET, revision: 1 });
    expect(decodeThresholds(hash).get('CO2')).toEqual(SET);
  });
});
