/**
 * A rule that waits, as the device page shows it: pending (with when it is due) while its condition
 * holds and its duration is not met, nothing once met, and nothing when the rules changed since.
 */
import { describe, expect, it } from 'vitest';
import { pendingOf } from '../../../src/console/device-data.ts';
import { parseThresholdSet, thresholdFingerprint } from '../../../src/domain/thresholds.ts';
import type { PointRecord } from '../../../src/state/point-record.ts';

const MIN = 60_000;
const set = parseThresholdSet(
  {
    rules: [
      { status: 'WARNING', above: 25 },
      { status: 'CRITICAL', above: 30, for: '10m', description: 'Overheating' },
    ],
  },
  'temperature',
);

const point = (over: Partial<PointRecord>): PointRecord => ({
  updatedMs: 3 * MIN,
  offsetNs: 0,
  rule: 0,
  rulesId: thresholdFingerprint(set),
  status: 'WARNING',
  lastSuccessMs: null,
  statusSinceMs: 0,
  hour: null,
  receivedMs: 3 * MIN,
  held: [
    { rule: 1, sinceMs: 0 },
    { rule: 0, sinceMs: null },
  ],
  shownValue: '31.0 °C',
  ...over,
});

describe('a pending condition on the device page', () => {
  it('shows the waiting rule that is not met yet, with its text and when it began', () => {
    expect(pendingOf(point({}), set, 'temperature', 'en')).toEqual({
      status: 'CRITICAL',
      text: 'Overheating for 10 min',
      sinceMs: 0,
      forMs: 10 * MIN,
    });
  });

  it('shows nothing once the rule is met, when nothing waits, or when the rules changed', () => {
    expect(
      pendingOf(point({ updatedMs: 10 * MIN, rule: 1, status: 'CRITICAL' }), set, 'temperature', 'en'),
    ).toBeNull();
    expect(pendingOf(point({ held: [] }), set, 'temperature', 'en')).toBeNull();
    expect(pendingOf(point({ rulesId: 'other' }), set, 'temperature', 'en')).toBeNull();
  });
});
