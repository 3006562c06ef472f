import { ReplyError } from 'ioredis';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { BLOCK_MS, EntryReader } from '../../../src/worker/entry-reader.ts';
import { LoopPartitions } from '../../../src/worker/partition-assignment.ts';
import { createStepPolicy } from '../../../src/worker/step-policy.ts';
import {
  entry,
  FakeLeases,
  FakeQueue,
  flush,
  keys,
  silentLog,
  testMetrics,
  watch,
} from './step-loop-fakes.ts';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

const config = {
  batchMaxPayloads: 100,
  workerBatchMaxPayloads: 2000,
  workerStepIntervalMs: 400,
  jobBackoffMs: 50,
};

function reader(...owned: number[]) {
  const queue = new FakeQueue();
  const leases = new FakeLeases(...owned);
  const policy = createStepPolicy({ backoffMs: 50, backoffMaxMs: 1000, isolateAfter: 3, maxAttempts: 5 });
  const partitions = new LoopPartitions({
    assigned: () => leases.assigned(),
    leases,
    keys,
    isFinishing: () => false,
    metrics: testMetrics(),
    log: silentLog,
  });
  partitions.look();
  const pauses: number[] = [];
  const entryReader = new EntryReader({
    config,
    queue,
    policy,
    fenceOf: (entries) => partitions.fenceOf(entries),
    log: silentLog,
    pause: (ms) => {
      pauses.push(ms);
      return new Promise((resolve) => setTimeout(resolve, ms));
    },
    now: () => Date.now(),
  });
  return { entryReader, queue, leases, policy, partitions, pauses };
}

describe('entry reader', () => {
  it("reads a recovering partition's pending entries, an isolated one's one at a time", async () => {
    const { entryReader, queue, policy } = reader(0, 1, 2);
    queue.pending.set(0, [entry(0, 'a'), entry(0, 'b')]);
    queue.pending.set(1, [entry(1, 'c'), entry(1, 'd')]);
    queue.add(entry(2, 'e'));
    policy.recover(0);
    for (let i = 0; i < 3; i++) policy.failed([{ partition: 1, id: 'c' }]);

    const read = await entryReader.read([0, 1, 2]);
    expect(read.map((e) => e.id)).toEqual(['a', 'b', 'c']);
    expect(queue.calls).toEqual(['readPending 0 6', 'readPending 1 1']);
  });

  it('goes back to new entries once a partition has no pending ones left', async () => {
    const { entryReader, queue, policy } = reader(0);
    policy.recover(0);
    expect(await entryReader.read([0])).toEqual([]);
    expect(policy.isRecovering(0)).toBe(false);
    queue.add(entry(0, 'a'));
    expect((await entryReader.read([0])).map((e) => e.id)).toEqual(['a']);
  });

  it('sizes a read so that a step stays within the payloads a worker step takes', async () => {
    const { entryReader, queue } = reader(0, 1);
    queue.add(entry(0, 'a', 1));
    await entryReader.read([0, 1]);
    // As large as the largest entries until measured: 2000 / (100 × 2 partitions).
    expect(queue.calls[0]).toBe('readNew 0,1 10');
    entryReader.stepStarted([entry(0, 'a', 1)]);
    await vi.advanceTimersByTimeAsync(config.workerStepIntervalMs);
    queue.add(entry(0, 'b', 1));
    await entryReader.read([0, 1]);
    // 2000 / ((100 × 0.8 + 1 × 0.2) × 2).
    expect(queue.calls.at(-1)).toBe('readNew 0,1 12');
  });

  it('starts a step under steady load no sooner than the step interval after the last one', async () => {
    const { entryReader, queue } = reader(0);
    entryReader.stepStarted([entry(0, 'a')]);
    await vi.advanceTimersByTimeAsync(100);
    queue.add(entry(0, 'b'));
    const read = entryReader.read([0]);
    await vi.advanceTimersByTimeAsync(299);
    expect(queue.calls).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    expect((await read).map((e) => e.id)).toEqual(['b']);
  });

  it('reads again at once after a read that filled a partition (a backlog)', async () => {
    const { entryReader, queue, pauses } = reader(0);
    queue.add(...Array.from({ length: 25 }, (_, i) => entry(0, `e${i}`, 100)));
    expect(await entryReader.read([0])).toHaveLength(20);
    entryReader.stepStarted([entry(0, 'x', 100)]);
    const next = watch(entryReader.read([0]));
    await flush();
    expect(next.settled).toBe(true);
    expect(pauses).toEqual([]);
  });

  it('waits for news when nothing is new, and answers no entries', async () => {
    const { entryReader, queue } = reader(0, 1);
    const read = watch(entryReader.read([0, 1]));
    await flush();
    expect(queue.calls).toEqual(['readNew 0,1 10', `waitForEntries 0,1 ${BLOCK_MS}`]);
    expect(read.settled).toBe(false);
    queue.add(entry(1, 'late'));
    await flush();
    expect(read.settled).toBe(true);
    expect(queue.pendingIds(1)).toEqual([]);
  });

  it('reads new entries under the lease values of the last look', async () => {
    const { entryReader, queue, leases, policy, pauses } = reader(0);
    queue.lost.add(leases.held.get(0)!);
    queue.add(entry(0, 'a'));
    expect(await entryReader.read([0])).toEqual([]);
    expect(queue.pendingIds(0)).toEqual([]);
    // Not a fault to retry: the next look drops the partition.
    expect(policy.isRecovering(0)).toBe(false);
    expect(pauses).toEqual([]);
  });

  it('reads nothing of a partition lost since the last look', async () => {
    const { entryReader, queue, leases, partitions } = reader(0);
    leases.held.delete(0);
    partitions.look();
    queue.add(entry(0, 'a'));
    expect(await entryReader.read([0])).toEqual([]);
    expect(queue.calls).toEqual([]);
  });

  it('creates the groups again when a stream lost its group, and retries after a back-off', async () => {
    const { entryReader, queue, policy, pauses } = reader(0, 1);
    const NoGroup = ReplyError as ErrorConstructor;
    queue.readNew = () => Promise.reject(new NoGroup('NOGROUP No such key or consumer group'));
    const read = entryReader.read([0, 1]);
    await vi.advanceTimersByTimeAsync(config.jobBackoffMs);
    expect(await read).toEqual([]);
    expect(queue.calls).toEqual(['ensureGroups']);
    expect(pauses).toEqual([config.jobBackoffMs]);
    expect([policy.isRecovering(0), policy.isRecovering(1)]).toEqual([true, true]);
  });

  it('reads pending entries next after a read failed', async () => {
    const { entryReader, queue, policy } = reader(0);
    queue.readNew = () => Promise.reject(new Error('connection lost'));
    const read = entryReader.read([0]);
    await vi.advanceTimersByTimeAsync(config.jobBackoffMs);
    expect(await read).toEqual([]);
    expect(queue.calls).toEqual([]);
    expect(policy.isRecovering(0)).toBe(true);
  });
});
