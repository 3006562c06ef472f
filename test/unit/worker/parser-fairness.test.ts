import { describe, expect, it } from 'vitest';
import { createParserFairness } from '../../../src/worker/parser-fairness.ts';

/** A policy over CPU counts and a clock the test moves. */
function setUp(share = 0.25, windowMs = 10_000) {
  let nowMs = 1_000_000;
  const cpuMs = new Map<string, number>();
  const changes: [string, boolean][] = [];
  const fairness = createParserFairness({
    share,
    windowMs,
    cpuTimeByEnv: () => cpuMs,
    clock: () => nowMs,
    onChange: (env, slowed) => changes.push([env, slowed]),
  });
  /** `ms` pass, during which each environment's parsers use the given fraction of them. */
  const spend = (ms: number, used: Record<string, number>) => {
    nowMs += ms;
    for (const [env, f] of Object.entries(used)) cpuMs.set(env, (cpuMs.get(env) ?? 0) + ms * f);
  };
  return { fairness, spend, changes };
}

const both = new Set(['evil', 'victim']);

describe('parser fairness', () => {
  it('slows an environment whose parsers use more than their share of the window', () => {
    const { fairness, spend } = setUp();
    fairness.slowedAmong(both);
    spend(2000, { evil: 0.6, victim: 0.05 });
    expect([...fairness.slowedAmong(both)]).toEqual(['evil']);
    expect(fairness.overShare().get('evil')).toBeCloseTo(0.6);
  });

  it('slows nobody in a step of one environment, or when every environment is over', () => {
    const { fairness, spend } = setUp();
    fairness.slowedAmong(both);
    spend(2000, { evil: 0.6, victim: 0.3 });
    expect(fairness.slowedAmong(new Set(['evil'])).size).toBe(0);
    expect(fairness.slowedAmong(both).size).toBe(0);
    expect(fairness.slowedAmong(new Set(['evil', 'quiet'])).has('evil')).toBe(true);
  });

  it('lets an environment go first again once the window no longer holds its heavy use', () => {
    const { fairness, spend, changes } = setUp(0.25, 10_000);
    fairness.slowedAmong(both);
    spend(2000, { evil: 0.9 });
    expect(fairness.slowedAmong(both).has('evil')).toBe(true);
    // Quiet for more than a window, sampled along the way as steps come.
    for (let i = 0; i < 12; i++) {
      spend(1000, { evil: 0.01, victim: 0.01 });
      fairness.slowedAmong(both);
    }
    expect(fairness.slowedAmong(both).size).toBe(0);
    expect(changes).toEqual([
      ['evil', true],
      ['evil', false],
    ]);
  });

  it('measures the share over the window only, not since the start', () => {
    const { fairness, spend } = setUp(0.25, 10_000);
    fairness.slowedAmong(both);
    // A long quiet past would dilute a burst if the whole history counted.
    for (let i = 0; i < 60; i++) {
      spend(1000, { victim: 0.01 });
      fairness.slowedAmong(both);
    }
    for (let i = 0; i < 5; i++) {
      spend(1000, { evil: 0.8 });
      fairness.slowedAmong(both);
    }
    expect(fairness.slowedAmong(both).has('evil')).toBe(true);
  });

  it('is off at a share of 1', () => {
    const { fairness, spend } = setUp(1);
    fairness.slowedAmong(both);
    spend(2000, { evil: 1 });
    expect(fairness.slowedAmong(both).size).toBe(0);
  });
});
