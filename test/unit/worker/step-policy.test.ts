import { describe, expect, it } from 'vitest';
import { createStepPolicy } from '../../../src/worker/step-policy.ts';

function policyAt(startMs = 1_000_000) {
  const clock = { nowMs: startMs };
  const policy = createStepPolicy({
    backoffMs: 100,
    backoffMaxMs: 350,
    isolateAfter: 3,
    maxAttempts: 4,
    clock: () => clock.nowMs,
  });
  return { policy, clock };
}

const e = (partition: number, id: string) => ({ partition, id });

describe('step policy', () => {
  it('backs a failed partition off, doubling from the base delay up to the cap', () => {
    const { policy, clock } = policyAt();
    const delays: number[] = [];
    for (let failure = 1; failure <= 4; failure++) {
      policy.failed([e(1, `a${failure}`)]);
      const start = clock.nowMs;
      while (policy.ready([1]).length === 0) clock.nowMs += 1;
      delays.push(clock.nowMs - start);
    }
    expect(delays).toEqual([100, 200, 350, 350]);
  });

  it('keeps only the partitions of a failed step waiting, and says how long until the first is ready', () => {
    const { policy, clock } = policyAt();
    policy.failed([e(1, 'a'), e(1, 'b')]);
    expect(policy.ready([0, 1, 2])).toEqual([0, 2]);
    clock.nowMs += 40;
    expect(policy.waitMs([1])).toBe(60);
    clock.nowMs += 60;
    expect(policy.ready([0, 1, 2])).toEqual([0, 1, 2]);
  });

  it('bounds the wait it reports to between 10 ms and 1 s', () => {
    const { policy, clock } = policyAt();
    expect(policy.waitMs([0])).toBe(10);
    policy.failed([e(0, 'a')]);
    clock.nowMs += 95;
    expect(policy.waitMs([0])).toBe(10);
    const slow = createStepPolicy({
      backoffMs: 5000,
      backoffMaxMs: 5000,
      isolateAfter: 3,
      maxAttempts: 4,
      clock: () => 0,
    });
    slow.failed([e(0, 'a')]);
    expect(slow.waitMs([0])).toBe(1000);
  });

  it('reads a failed partition from its pending entries until they are done', () => {
    const { policy } = policyAt();
    policy.failed([e(2, 'a')]);
    expect(policy.isRecovering(2)).toBe(true);
    expect(policy.isRecovering(3)).toBe(false);
    policy.recovered(2);
    expect(policy.isRecovering(2)).toBe(false);
    expect(policy.ready([2])).toEqual([2]);
  });

  it('marks a partition new to the loop to be read from its pending entries', () => {
    const { policy } = policyAt();
    policy.recover(5);
    expect(policy.isRecovering(5)).toBe(true);
    expect(policy.ready([5])).toEqual([5]);
  });

  it('isolates a partition after three failed steps in a row, not before', () => {
    const { policy } = policyAt();
    policy.failed([e(1, 'a')]);
    policy.failed([e(1, 'a')]);
    expect(policy.isIsolated(1)).toBe(false);
    policy.failed([e(1, 'a')]);
    expect(policy.isIsolated(1)).toBe(true);
    expect(policy.isIsolated(0)).toBe(false);
  });

  it('keeps an isolated partition isolated after an isolated success, and frees it once recovered', () => {
    const { policy } = policyAt();
    for (let i = 0; i < 3; i++) policy.failed([e(1, 'a')]);
    policy.succeeded([e(1, 'a')], true);
    expect(policy.isIsolated(1)).toBe(true);
    expect(policy.ready([1])).toEqual([1]);
    policy.recovered(1);
    expect(policy.isIsolated(1)).toBe(false);
  });

  it('forgets the failures of a partition whose step succeeds together', () => {
    const { policy } = policyAt();
    policy.failed([e(1, 'a')]);
    policy.failed([e(1, 'a')]);
    policy.succeeded([e(1, 'a')], false);
    policy.failed([e(1, 'b')]);
    policy.failed([e(1, 'b')]);
    expect(policy.isIsolated(1)).toBe(false);
  });

  it('gives an entry up after its fourth failure, counting each entry apart', () => {
    const { policy } = policyAt();
    for (let i = 0; i < 3; i++) policy.failed([e(1, 'a'), e(1, 'b')]);
    policy.failed([e(1, 'a')]);
    expect(policy.exhausted('a')).toBe(true);
    expect(policy.exhausted('b')).toBe(false);
  });

  it('starts counting an entry again once it succeeded', () => {
    const { policy } = policyAt();
    for (let i = 0; i < 3; i++) policy.failed([e(1, 'a')]);
    policy.succeeded([e(1, 'a')], true);
    policy.failed([e(1, 'a')]);
    expect(policy.exhausted('a')).toBe(false);
  });

  it('forgets a dead-lettered entry and lets its partition go on at once', () => {
    const { policy } = policyAt();
    for (let i = 0; i < 4; i++) policy.failed([e(1, 'a')]);
    policy.forget(e(1, 'a'));
    expect(policy.exhausted('a')).toBe(false);
    expect(policy.isIsolated(1)).toBe(false);
    expect(policy.ready([1])).toEqual([1]);
  });
});
