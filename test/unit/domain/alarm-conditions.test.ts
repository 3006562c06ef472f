import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  checkStaleRule,
  describeDuration,
  hasTimers,
  parseConditionDuration,
  staleEventText,
} from '../../../src/domain/alarm-conditions.ts';
import { ruleEventText } from '../../../src/domain/rule-text.ts';
import { parseThresholdSet, possibleMatches, thresholdFingerprint } from '../../../src/domain/thresholds.ts';
import type { ThresholdSet } from '../../../src/domain/types.ts';

/** WARNING above 25 at once, CRITICAL above 30 after 10 minutes, WARNING below 15 after 90 s. */
const freezer: ThresholdSet = parseThresholdSet(
  {
    rules: [
      { status: 'WARNING', above: 25 },
      { status: 'CRITICAL', above: 30, for: '10m', description: 'Overheating' },
      { status: 'WARNING', below: 15, for: '90s' },
    ],
    hysteresis: 1,
    stale: { after: '30m', status: 'ERROR' },
  },
  'temperature',
);

describe('conditions that wait', () => {
  it.each([
    ['90s', 90_000],
    ['10m', 600_000],
    ['2h', 7_200_000],
    ['1d', 86_400_000],
    ['500ms', 500],
  ])('reads the duration %s as %d ms', (text, ms) => {
    expect(parseConditionDuration(text)).toEqual({ ms });
  });

  it.each([
    ['soon', /must be a duration like 90s, 10m or 2h, got "soon"/],
    [10, /got 10$/],
    ['10', /got "10"/],
    ['0s', /must be longer than 0/],
    ['31d', /must be at most 30d/],
    [null, /got null/],
  ])('refuses %j', (input, message) => {
    const result = parseConditionDuration(input);
    expect('wrong' in result && result.wrong).toMatch(message);
  });

  it('reads a stale rule, WARNING by default, and names what is wrong with one', () => {
    expect(checkStaleRule({ after: '30m' })).toEqual({ rule: { afterMs: 1_800_000, status: 'WARNING' } });
    expect(checkStaleRule({ after: '-5m' })).toMatchObject({ path: ['after'] });
    expect(checkStaleRule({ after: '5m', colour: 'red' })).toMatchObject({
      path: [],
      message: 'unknown field "colour" (expected after, status)',
    });
    expect(checkStaleRule('30m')).toMatchObject({ path: [], message: /must be an object/ });
  });

  it('says durations the way event messages do', () => {
    expect([600_000, 7_200_000, 90_000, 1500, 5_400_000].map(describeDuration)).toEqual([
      '10 min',
      '2 h',
      '90 s',
      '1500 ms',
      '90 min',
    ]);
    expect(staleEventText(freezer.stale!)).toBe('No value for 30 min');
    expect(freezer.rules.map((r) => ruleEventText(r, 'temperature', 'en'))).toEqual([
      'Above 25 °C',
      'Overheating for 10 min',
      'Below 15 °C for 90 s',
    ]);
  });

  it('lists the rules a value meets, most severe first, for every previous rule', () => {
    expect(possibleMatches(31, freezer)).toEqual([[1, 0]]);
    expect(possibleMatches(20, freezer)).toEqual([[]]);
    expect(possibleMatches(10, freezer)).toEqual([[2]]);
    // 29.5 is above 30 − 1 only for a data point held in CRITICAL (rule 1).
    expect(possibleMatches(29.5, freezer)).toEqual([[0], [0], [1, 0], [0]]);
  });

  it('makes for and stale part of the fingerprint, and leaves sets without them as they were', () => {
    const plain: ThresholdSet = { rules: [{ status: 'WARNING', above: 25 }], hysteresis: 0 };
    const fingerprint = thresholdFingerprint(plain);
    // The canonical form of a set without `for` and `stale`, as before they existed.
    const before = JSON.stringify({ h: 0, r: [['WARNING', 25, null, null, null]] });
    expect(fingerprint).toBe(createHash('sha256').update(before).digest('hex').slice(0, 12));
    const waiting = { ...plain, rules: [{ status: 'WARNING' as const, above: 25, forMs: 60_000 }] };
    const stale = { ...plain, stale: { afterMs: 60_000, status: 'WARNING' as const } };
    expect(new Set([fingerprint, thresholdFingerprint(waiting), thresholdFingerprint(stale)]).size).toBe(3);
    expect(hasTimers(plain)).toBe(false);
    expect(hasTimers(waiting) && hasTimers(stale)).toBe(true);
  });
});
