import { describe, expect, it, vi } from 'vitest';
import { countOf, crashed, delivered, entry, flush, stepParts, watch } from './step-loop-fakes.ts';

describe('running a step', () => {
  it('takes the entries, writes their state, and acknowledges them only once their history is written', async () => {
    const { runner, queue, processing, finishing, metrics } = stepParts(0, 1);
    await runner.run(delivered(queue, entry(0, 'a'), entry(1, 'b', 3)));
    expect(processing.steps.map((items) => items.length)).toEqual([4]);
    expect(queue.calls).toEqual(['take batch a,b']);
    expect([finishing.has(0), finishing.has(1)]).toEqual([true, true]);

    processing.writeHistory(0);
    await vi.waitFor(() => expect(queue.finished).toHaveLength(1));
    expect(queue.finished[0]!.ids).toEqual(['a', 'b']);
    expect(queue.finished[0]!.commands.map((c) => c[2])).toEqual(['a/0', 'b/0', 'b/1', 'b/2']);
    await vi.waitFor(() => expect(finishing.size).toBe(0));
    expect(await countOf(metrics.steps, { result: 'completed' })).toBe(1);
    expect(await countOf(metrics.payloads)).toBe(4);
    expect(queue.taken.size).toBe(0);
  });

  it("holds its place in the crash gate until the step's acknowledgement is done", async () => {
    const { runner, queue, processing, gate } = stepParts(0);
    await runner.run(delivered(queue, entry(0, 'a')));
    const alone = watch(gate.alone());
    await flush();
    expect(alone.settled).toBe(false);
    processing.writeHistory(0);
    await vi.waitFor(() => expect(alone.settled).toBe(true));
    expect(queue.finished).toHaveLength(1);
  });

  it("processes an isolated partition's entries one at a time, each finished before the next", async () => {
    const { runner, queue, processing, policy } = stepParts(0, 1);
    for (let i = 0; i < 3; i++) policy.failed([{ partition: 1, id: 'x' }]);
    const run = watch(runner.run(delivered(queue, entry(1, 'a'), entry(1, 'b'), entry(0, 'c'))));
    await vi.waitFor(() => expect(processing.steps).toHaveLength(2));
    expect(processing.steps.map((items) => items.map((i) => i.id))).toEqual([['c/0'], ['a/0']]);
    processing.writeHistory(1);
    await vi.waitFor(() => expect(processing.steps).toHaveLength(3));
    expect(queue.finished.map((f) => f.ids)).toEqual([['a']]);
    processing.writeHistory(2);
    await vi.waitFor(() => expect(run.settled).toBe(true));
    processing.writeHistory(0);
    await vi.waitFor(() => expect(queue.finished).toHaveLength(3));
    expect(queue.finished.map((f) => f.ids)).toEqual([['a'], ['b'], ['c']]);
  });

  it("hands entries holding a suspect to the suspects' own step, taking none as a batch", async () => {
    const { runner, queue, processing } = stepParts(0);
    const [suspect] = crashed(queue, 1, entry(0, 'a'));
    const [fresh] = delivered(queue, entry(0, 'b'));
    const run = runner.run([suspect!, fresh!]);
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    expect(queue.calls).toEqual(['take batch a,b', 'take suspects a,b']);
    expect(processing.steps[0]!.map((i) => i.id)).toEqual(['a/0']);
    processing.writeHistory(0);
    await run;
    expect(queue.pendingIds(0)).toEqual(['b']);
    expect(queue.taken.has('b')).toBe(false);
  });

  it('drops a step whose lease changed hands before its acknowledgement, as stale', async () => {
    const { runner, queue, processing, leases, metrics, policy, finishing } = stepParts(0);
    await runner.run(delivered(queue, entry(0, 'a')));
    queue.lost.add(leases.held.get(0)!);
    processing.writeHistory(0);
    await vi.waitFor(() => expect(finishing.size).toBe(0));
    expect(queue.finished).toEqual([]);
    expect(queue.pendingIds(0)).toEqual(['a']);
    expect(await countOf(metrics.fencedSteps)).toBe(1);
    expect(await countOf(metrics.steps, { result: 'failed' })).toBe(0);
    expect(policy.isRecovering(0)).toBe(false);
  });

  it('retries a step that failed as this worker saw after a back-off, its takes given back', async () => {
    const { runner, queue, processing, metrics, policy } = stepParts(0, 1);
    processing.failWith = new Error('Redis unreachable');
    await runner.run(delivered(queue, entry(0, 'a')));
    expect(queue.calls).toEqual(['take batch a', 'release a']);
    expect(queue.taken.size).toBe(0);
    expect(await countOf(metrics.steps, { result: 'failed' })).toBe(1);
    expect(policy.isRecovering(0)).toBe(true);
    expect(policy.ready([0, 1])).toEqual([1]);
  });

  it('takes nothing of a partition lost since the read, and reads it again if it comes back', async () => {
    const { runner, queue, leases, partitions, policy, processing } = stepParts(0);
    const entries = delivered(queue, entry(0, 'a'));
    leases.held.delete(0);
    partitions.look();
    await runner.run(entries);
    expect(queue.calls).toEqual([]);
    expect(processing.steps).toEqual([]);
    expect(policy.isRecovering(0)).toBe(true);
  });
});
