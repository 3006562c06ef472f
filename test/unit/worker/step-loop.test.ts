import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createWakeableSleep } from '../../../src/lib/wakeable-sleep.ts';
import { createCrashGate } from '../../../src/worker/crash-gate.ts';
import { runStepLoop } from '../../../src/worker/step-loop.ts';
import {
  countOf,
  entry,
  FakeLeases,
  FakeProcessing,
  FakeQueue,
  keys,
  silentLog,
  testMetrics,
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
  jobAttempts: 5,
  jobBackoffMs: 50,
  jobBackoffMaxMs: 1000,
  poisonDeliveries: 5,
};

/** A step loop over the fakes, owning `owned`; `close()` ends it as the worker's close does. */
function startLoop(owned: number[], overrides: Partial<typeof config> = {}) {
  const queue = new FakeQueue();
  const leases = new FakeLeases(...owned);
  leases.onRelease = (value) => queue.lost.add(value);
  const processing = new FakeProcessing();
  const metrics = testMetrics();
  const sleeps = createWakeableSleep();
  const state = { closing: false, reconnections: 0 };
  const done = runStepLoop({
    config: { ...config, ...overrides },
    keys,
    queue,
    leases,
    partitions: () => leases.assigned(),
    reconnections: () => state.reconnections,
    process: processing.process,
    gate: createCrashGate(),
    deadLetterLog: () => [],
    metrics,
    log: silentLog,
    isClosing: () => state.closing,
    pause: sleeps.sleep,
  });
  const close = async () => {
    state.closing = true;
    sleeps.wakeAll();
    await vi.advanceTimersByTimeAsync(1000);
    await done;
  };
  return { queue, leases, processing, metrics, state, close };
}

describe('step loop', () => {
  it('processes what waits in its partitions as one step, acknowledged once its history is written', async () => {
    const { queue, processing, close } = startLoop([0, 1]);
    queue.add(entry(0, 'a'), entry(1, 'b'));
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    expect(processing.steps[0]!.map((i) => i.id)).toEqual(['a/0', 'b/0']);
    await vi.advanceTimersByTimeAsync(1000);
    expect(queue.finished).toEqual([]);
    processing.writeHistory(0);
    await vi.waitFor(() => expect(queue.finished.map((f) => f.ids)).toEqual([['a', 'b']]));
    await close();
  });

  it('reads a partition new to it from its pending entries first, then the new ones', async () => {
    const { queue, processing, close } = startLoop([0]);
    queue.pending.set(0, [entry(0, 'old')]);
    queue.add(entry(0, 'new'));
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    expect(processing.steps[0]!.map((i) => i.id)).toEqual(['old/0']);
    // While it reads pending entries, a step still finishing would be read again: it waits.
    await vi.advanceTimersByTimeAsync(2000);
    expect(processing.steps).toHaveLength(1);
    processing.writeHistory(0);
    await vi.waitFor(() => expect(processing.steps).toHaveLength(2));
    expect(processing.steps[1]!.map((i) => i.id)).toEqual(['new/0']);
    processing.writeHistory(1);
    await close();
  });

  it('hands a partition back only once no step of it is finishing, starting none of it meanwhile', async () => {
    const { queue, leases, processing, metrics, close } = startLoop([0, 1]);
    queue.add(entry(0, 'a'));
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    leases.toRelease.add(0);
    // A read that began before is not called back: let it end (it finds nothing) first.
    await vi.advanceTimersByTimeAsync(1000);
    const offeredBefore = leases.offered.length;
    queue.add(entry(0, 'b'));
    await vi.advanceTimersByTimeAsync(2000);
    expect(leases.offered.length).toBeGreaterThan(offeredBefore + 3);
    expect(leases.offered.slice(offeredBefore)).toContainEqual([1]);
    expect(leases.offered.slice(offeredBefore).some((list) => list.includes(0))).toBe(false);
    expect(leases.held.has(0)).toBe(true);
    expect(processing.steps).toHaveLength(1);

    processing.writeHistory(0);
    await vi.waitFor(() => expect(leases.held.has(0)).toBe(false));
    expect(queue.finished.map((f) => f.ids)).toEqual([['a']]);
    expect(await countOf(metrics.handedBack)).toBe(1);
    await vi.advanceTimersByTimeAsync(2000);
    expect(processing.steps).toHaveLength(1);
    expect(queue.waiting.get(0)?.map((e) => e.id)).toEqual(['b']);
    await close();
  });

  it('keeps at most 8 steps finishing, and goes on once one is done', async () => {
    const { queue, processing, close } = startLoop([0], { batchMaxPayloads: 1, workerBatchMaxPayloads: 1 });
    queue.add(...Array.from({ length: 12 }, (_, i) => entry(0, `e${i}`)));
    await vi.waitFor(() => expect(processing.steps).toHaveLength(8));
    await vi.advanceTimersByTimeAsync(2000);
    expect(processing.steps).toHaveLength(8);
    processing.writeHistory(0);
    await vi.waitFor(() => expect(processing.steps).toHaveLength(9));
    for (let n = 1; n < 12; n++) {
      await vi.waitFor(() => expect(processing.steps.length).toBeGreaterThan(n));
      processing.writeHistory(n);
    }
    await vi.waitFor(() => expect(queue.finished).toHaveLength(12));
    await close();
  });

  it('refuses a step whose lease changed hands while it ran, and leaves its entries to the new owner', async () => {
    const { queue, leases, processing, metrics, close } = startLoop([0]);
    queue.add(entry(0, 'a'));
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    queue.lost.add(leases.held.get(0)!);
    processing.writeHistory(0);
    await vi.waitFor(async () => expect(await countOf(metrics.fencedSteps)).toBe(1));
    expect(queue.finished).toEqual([]);
    expect(queue.pendingIds(0)).toEqual(['a']);
    expect(await countOf(metrics.steps, { result: 'failed' })).toBe(0);
    await close();
  });

  it('reads its pending entries again after a reconnection', async () => {
    const { queue, processing, state, close } = startLoop([0]);
    await vi.advanceTimersByTimeAsync(1000);
    // A read whose reply the dropped connection lost: delivered, yet no step holds it.
    queue.pending.set(0, [entry(0, 'unanswered')]);
    await vi.advanceTimersByTimeAsync(2000);
    expect(processing.steps).toEqual([]);
    state.reconnections += 1;
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    expect(processing.steps[0]!.map((i) => i.id)).toEqual(['unanswered/0']);
    processing.writeHistory(0);
    await close();
  });

  it('retries a failed step from its pending entries after the back-off', async () => {
    const { queue, processing, close } = startLoop([0]);
    processing.failWith = new Error('Redis unreachable');
    queue.add(entry(0, 'a'));
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    processing.failWith = undefined;
    await vi.waitFor(() => expect(processing.steps).toHaveLength(2));
    expect(processing.steps[1]!.map((i) => i.id)).toEqual(['a/0']);
    expect(processing.startedMs[1]! - processing.startedMs[0]!).toBeGreaterThanOrEqual(config.jobBackoffMs);
    processing.writeHistory(0);
    await vi.waitFor(() => expect(queue.finished.map((f) => f.ids)).toEqual([['a']]));
    await close();
  });

  it('waits for its steps still finishing when the worker closes', async () => {
    const { queue, processing, close } = startLoop([0]);
    queue.add(entry(0, 'a'));
    await vi.waitFor(() => expect(processing.steps).toHaveLength(1));
    let closed = false;
    const closing = close().then(() => (closed = true));
    await vi.advanceTimersByTimeAsync(2000);
    expect(closed).toBe(false);
    processing.writeHistory(0);
    await closing;
    expect(queue.finished.map((f) => f.ids)).toEqual([['a']]);
  });
});
