import { describe, expect, it } from 'vitest';
import { FinishingSteps } from '../../../src/worker/finishing-steps.ts';
import { deferred, flush, watch } from './step-loop-fakes.ts';

const noFailure = () => Promise.resolve();

describe('finishing steps', () => {
  it('holds the loop back while as many steps as allowed are finishing', async () => {
    const finishing = new FinishingSteps(2);
    const first = deferred();
    void finishing.add([0], () => first.promise, noFailure);
    void finishing.add([1], () => new Promise<void>(() => undefined), noFailure);
    const settled = watch(finishing.settle(() => false));
    await flush();
    expect(settled.settled).toBe(false);
    first.resolve();
    await flush();
    expect(settled.settled).toBe(true);
    expect(finishing.size).toBe(1);
  });

  it('lets the loop go on below the limit', async () => {
    const finishing = new FinishingSteps(2);
    void finishing.add([0], () => new Promise<void>(() => undefined), noFailure);
    const settled = watch(finishing.settle(() => false));
    await flush();
    expect(settled.settled).toBe(true);
  });

  it('waits for every step finishing while the loop must not go on beside them', async () => {
    const finishing = new FinishingSteps(8);
    const steps = [deferred(), deferred()];
    for (const [p, step] of steps.entries()) void finishing.add([p], () => step.promise, noFailure);
    const settled = watch(finishing.settle(() => true));
    steps[0]!.resolve();
    await flush();
    expect(settled.settled).toBe(false);
    steps[1]!.resolve();
    await flush();
    expect(settled.settled).toBe(true);
    expect(finishing.size).toBe(0);
  });

  it('counts a partition as finishing until its last step is done', async () => {
    const finishing = new FinishingSteps(8);
    const a = deferred();
    const b = deferred();
    void finishing.add([3, 3], () => a.promise, noFailure);
    void finishing.add([3, 4], () => b.promise, noFailure);
    expect([finishing.has(3), finishing.has(4), finishing.has(5)]).toEqual([true, true, false]);
    a.resolve();
    await flush();
    expect([finishing.has(3), finishing.has(4)]).toEqual([true, true]);
    b.resolve();
    await flush();
    expect([finishing.has(3), finishing.has(4)]).toEqual([false, false]);
  });

  it("keeps a failed step's partitions finishing until its failure is handled", async () => {
    const finishing = new FinishingSteps(8);
    const handled = deferred();
    const failures: unknown[] = [];
    const done = finishing.add(
      [2],
      () => Promise.reject(new Error('history down')),
      (err) => {
        failures.push(err);
        return handled.promise;
      },
    );
    await flush();
    expect(failures).toEqual([new Error('history down')]);
    expect(finishing.has(2)).toBe(true);
    handled.resolve();
    await expect(done).resolves.toBeUndefined();
    expect(finishing.has(2)).toBe(false);
  });

  it('drains every step in flight', async () => {
    const finishing = new FinishingSteps(8);
    const steps = [deferred(), deferred()];
    for (const step of steps) void finishing.add([0], () => step.promise, noFailure);
    const drained = watch(finishing.drain());
    steps[1]!.resolve();
    await flush();
    expect(drained.settled).toBe(false);
    steps[0]!.resolve();
    await flush();
    expect(drained.settled).toBe(true);
  });

  it('answers the end of the first step to finish', async () => {
    const finishing = new FinishingSteps(8);
    const slow = deferred();
    const fast = deferred();
    void finishing.add([0], () => slow.promise, noFailure);
    void finishing.add([1], () => fast.promise, noFailure);
    const ended = watch(finishing.anyEnded());
    fast.resolve();
    await flush();
    expect(ended.settled).toBe(true);
    expect(finishing.has(0)).toBe(true);
  });
});
