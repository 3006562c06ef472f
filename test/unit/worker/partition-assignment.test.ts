import { describe, expect, it } from 'vitest';
import { FinishingSteps } from '../../../src/worker/finishing-steps.ts';
import { assignPartitions, LoopPartitions } from '../../../src/worker/partition-assignment.ts';
import {
  countOf,
  deferred,
  FakeLeases,
  flush,
  keys,
  leaseValue,
  silentLog,
  testMetrics,
} from './step-loop-fakes.ts';

function heldLeases(held: Map<number, string>) {
  return { held: () => held };
}

describe('assignPartitions', () => {
  it("spreads the worker's partitions over its loops, each to the loop with the fewest", () => {
    const held = new Map([0, 1, 2, 3, 4].map((p) => [p, leaseValue(p)]));
    const assigned = assignPartitions(heldLeases(held), 2, testMetrics());
    const loop0 = assigned(0);
    const loop1 = assigned(1);
    expect([...loop0.owned.keys()]).toEqual([0, 2, 4]);
    expect([...loop1.owned.keys()]).toEqual([1, 3]);
    expect(loop0.owned.get(2)).toBe(leaseValue(2));
  });

  it('reports a partition as new to its loop once', () => {
    const held = new Map([[0, leaseValue(0)]]);
    const assigned = assignPartitions(heldLeases(held), 1, testMetrics());
    expect(assigned(0).added).toEqual([0]);
    expect(assigned(0).added).toEqual([]);
  });

  it('drops a lost partition, and reports it new again when taken in a new tenure', () => {
    const held = new Map([
      [0, leaseValue(0)],
      [1, leaseValue(1)],
    ]);
    const assigned = assignPartitions(heldLeases(held), 1, testMetrics());
    assigned(0);
    held.delete(1);
    expect([...assigned(0).owned.keys()]).toEqual([0]);
    held.set(0, leaseValue(0, 2));
    const again = assigned(0);
    expect(again.added).toEqual([0]);
    expect(again.owned.get(0)).toBe(leaseValue(0, 2));
  });

  it('keeps a partition on its loop while it is held', () => {
    const held = new Map([[0, leaseValue(0)]]);
    const assigned = assignPartitions(heldLeases(held), 2, testMetrics());
    assigned(0);
    held.set(1, leaseValue(1));
    held.set(2, leaseValue(2));
    expect([...assigned(0).owned.keys()]).toEqual([0, 2]);
    expect([...assigned(1).owned.keys()]).toEqual([1]);
  });

  it('sets the gauge of partitions held', async () => {
    const metrics = testMetrics();
    const held = new Map([0, 1, 2].map((p) => [p, leaseValue(p)]));
    assignPartitions(heldLeases(held), 2, metrics)(0);
    expect((await metrics.partitions.get()).values[0]?.value).toBe(3);
  });
});

function loopPartitions(leases: FakeLeases, finishing = new FinishingSteps(8)) {
  const metrics = testMetrics();
  const partitions = new LoopPartitions({
    assigned: () => leases.assigned(),
    leases,
    keys,
    isFinishing: (p) => finishing.has(p),
    metrics,
    log: silentLog,
  });
  return { partitions, metrics, finishing };
}

describe('LoopPartitions', () => {
  it('answers the partitions new to the loop at each look', () => {
    const leases = new FakeLeases(0, 1);
    const { partitions } = loopPartitions(leases);
    expect(partitions.look()).toEqual([0, 1]);
    leases.held.set(2, leaseValue(2));
    expect(partitions.look()).toEqual([2]);
    expect(partitions.partitions()).toEqual([0, 1, 2]);
  });

  it('fences a step with the lease values of the last look', () => {
    const leases = new FakeLeases(0, 1);
    const { partitions } = loopPartitions(leases);
    partitions.look();
    leases.held.set(1, leaseValue(1, 2));
    const fence = partitions.fenceOf([{ partition: 1 }, { partition: 0 }, { partition: 1 }]);
    expect(fence).toEqual({
      leaseKeys: [keys.partitionLease(1), keys.partitionLease(0)],
      values: [leaseValue(1), leaseValue(0)],
    });
    partitions.look();
    expect(partitions.fenceOf([{ partition: 1 }])?.values).toEqual([leaseValue(1, 2)]);
  });

  it('fences nothing once a partition of the step is no longer owned', () => {
    const leases = new FakeLeases(0, 1);
    const { partitions } = loopPartitions(leases);
    partitions.look();
    leases.held.delete(1);
    partitions.look();
    expect(partitions.fenceOf([{ partition: 0 }, { partition: 1 }])).toBeUndefined();
  });

  it('starts no step of a partition to hand back', () => {
    const leases = new FakeLeases(0, 1, 2);
    const { partitions } = loopPartitions(leases);
    partitions.look();
    leases.toRelease.add(1);
    expect(partitions.steppable()).toEqual([0, 2]);
  });

  it('hands a partition back only once no step of it is finishing', async () => {
    const leases = new FakeLeases(0, 1);
    const { partitions, finishing, metrics } = loopPartitions(leases);
    partitions.look();
    leases.toRelease.add(1);
    const history = deferred();
    void finishing.add(
      [1],
      () => history.promise,
      () => Promise.resolve(),
    );

    await partitions.handBack();
    expect(leases.offered).toEqual([[0]]);
    expect(leases.held.has(1)).toBe(true);
    expect(await countOf(metrics.handedBack)).toBe(0);

    history.resolve();
    await flush();
    await partitions.handBack();
    expect(leases.offered[1]).toEqual([0, 1]);
    expect(leases.held.has(1)).toBe(false);
    expect(await countOf(metrics.handedBack)).toBe(1);
  });

  it('keeps the partitions when handing back fails, to retry at the next step', async () => {
    const leases = new FakeLeases(0);
    leases.releasePending = () => Promise.reject(new Error('connection lost'));
    const { partitions, metrics } = loopPartitions(leases);
    partitions.look();
    leases.toRelease.add(0);
    await expect(partitions.handBack()).resolves.toBeUndefined();
    expect(partitions.partitions()).toEqual([0]);
    expect(await countOf(metrics.handedBack)).toBe(0);
  });
});
