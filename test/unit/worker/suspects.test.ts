import { describe, expect, it, vi } from 'vitest';
import {
  countOf,
  crashed,
  entry,
  flush,
  keys,
  POISON_DELIVERIES,
  stepParts,
  watch,
} from './step-loop-fakes.ts';

describe('suspects', () => {
  it('retries the suspects of a step that crashed once together, and finishes them', async () => {
    const { suspects, queue, processing } = stepParts(0);
    const entries = crashed(queue, 1, entry(0, 'a'), entry(0, 'b'));
    const run = suspects.run(entries);
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    processing.writeHistory(0);
    await run;
    expect(processing.steps[0]!.map((i) => i.id)).toEqual(['a/0', 'b/0']);
    expect(queue.finished.map((f) => f.ids)).toEqual([['a', 'b']]);
    expect(queue.pendingIds(0)).toEqual([]);
    expect(queue.taken.size).toBe(0);
  });

  it('halves a group that crashed again, and reads the rest from the pending entries later', async () => {
    const { suspects, queue, processing, policy } = stepParts(0);
    const entries = crashed(queue, 2, entry(0, 'a'), entry(0, 'b'), entry(0, 'c'));
    const run = suspects.run(entries);
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    processing.writeHistory(0);
    await run;
    expect(queue.finished.map((f) => f.ids)).toEqual([['a', 'b']]);
    expect(queue.pendingIds(0)).toEqual(['c']);
    expect(policy.isRecovering(0)).toBe(true);
  });

  it('dead-letters an entry that crashed its worker more than VIGIL_POISON_DELIVERIES times on its own', async () => {
    const { suspects, queue, processing, metrics, policy } = stepParts(0);
    const [poison] = crashed(queue, 1, entry(0, 'p', 2));
    queue.taken.set('p:a', POISON_DELIVERIES);
    await suspects.run([poison!]);
    expect(processing.steps).toEqual([]);
    expect(queue.finished).toHaveLength(1);
    const [logP0, logP1, deadLetter] = queue.finished[0]!.commands;
    expect([logP0?.[2], logP1?.[2]]).toEqual(['p/0', 'p/1']);
    expect(deadLetter?.slice(0, 7)).toEqual([
      'XADD',
      keys.deadLetters(),
      '*',
      'partition',
      '0',
      'entry',
      'p',
    ]);
    expect(queue.pendingIds(0)).toEqual([]);
    expect(await countOf(metrics.deadLetters)).toBe(2);
    expect(policy.isRecovering(0)).toBe(false);
  });

  it('processes a lone suspect at VIGIL_POISON_DELIVERIES crashes of its own', async () => {
    const { suspects, queue, processing, metrics } = stepParts(0);
    const [lone] = crashed(queue, 1, entry(0, 'p'));
    queue.taken.set('p:a', POISON_DELIVERIES - 1);
    const run = suspects.run([lone!]);
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    processing.writeHistory(0);
    await run;
    expect(queue.finished.map((f) => f.ids)).toEqual([['p']]);
    expect(await countOf(metrics.deadLetters)).toBe(0);
  });

  it('gives a lone suspect its crash back when its step fails as this worker sees', async () => {
    const { suspects, queue, processing, metrics } = stepParts(0);
    const [lone] = crashed(queue, 1, entry(0, 'p'));
    queue.taken.set('p:a', 2);
    processing.failWith = new Error('InfluxDB unreachable');
    await suspects.run([lone!]);
    expect(queue.taken.get('p')).toBe(1);
    expect(queue.taken.get('p:a')).toBe(2);
    expect(await countOf(metrics.steps, { result: 'failed' })).toBe(1);
    expect(queue.pendingIds(0)).toEqual(['p']);
  });

  it('runs with nothing else in flight in the process', async () => {
    const { suspects, queue, processing, gate } = stepParts(0);
    const leaveOrdinary = await gate.shared();
    const run = watch(suspects.run(crashed(queue, 1, entry(0, 'a'))));
    await flush();
    expect(queue.calls).toEqual([]);
    leaveOrdinary();
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    const ordinary = watch(gate.shared());
    await flush();
    expect(ordinary.settled).toBe(false);
    processing.writeHistory(0);
    await vi.waitFor(() => expect(run.settled).toBe(true));
    await vi.waitFor(() => expect(ordinary.settled).toBe(true));
  });

  it('takes nothing of a partition lost since the read, and reads it again if it comes back', async () => {
    const { suspects, queue, leases, partitions, policy } = stepParts(0);
    const entries = crashed(queue, 1, entry(0, 'a'));
    leases.held.delete(0);
    partitions.look();
    await suspects.run(entries);
    expect(queue.calls).toEqual([]);
    expect(policy.isRecovering(0)).toBe(true);
  });

  it('counts a take refused under a lease that changed hands as a stale step', async () => {
    const { suspects, queue, leases, metrics, processing } = stepParts(0);
    const entries = crashed(queue, 1, entry(0, 'a'));
    queue.lost.add(leases.held.get(0)!);
    await suspects.run(entries);
    expect(await countOf(metrics.fencedSteps)).toBe(1);
    expect(processing.steps).toEqual([]);
    expect(queue.taken.get('a')).toBe(1);
  });
});
