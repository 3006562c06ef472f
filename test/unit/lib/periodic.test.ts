import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { startPeriodic } from '../../../src/lib/periodic.ts';

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe('startPeriodic', () => {
  it('runs first after one interval, then one interval after each run ends', async () => {
    const runs: number[] = [];
    const periodic = startPeriodic({
      intervalMs: 100,
      run: async () => {
        runs.push(Date.now());
        await new Promise((resolve) => setTimeout(resolve, 30));
      },
      onError: () => undefined,
    });
    const start = Date.now();
    await vi.advanceTimersByTimeAsync(99);
    expect(runs).toEqual([]);
    await vi.advanceTimersByTimeAsync(1 + 30 + 100);
    expect(runs.map((t) => t - start)).toEqual([100, 230]);
    await vi.advanceTimersByTimeAsync(30);
    await periodic.close();
  });

  it('runs at once with firstRunAfterMs 0', async () => {
    let runs = 0;
    const periodic = startPeriodic({
      intervalMs: 1000,
      firstRunAfterMs: 0,
      run: () => Promise.resolve(runs++),
      onError: () => undefined,
    });
    await vi.advanceTimersByTimeAsync(0);
    expect(runs).toBe(1);
    await vi.advanceTimersByTimeAsync(1000);
    expect(runs).toBe(2);
    await periodic.close();
  });

  it('reports a failed run and runs again all the same', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const periodic = startPeriodic({
      intervalMs: 10,
      run: () => (++runs === 1 ? Promise.reject(new Error('Redis down')) : Promise.resolve()),
      onError: (err) => errors.push(err),
    });
    await vi.advanceTimersByTimeAsync(20);
    expect(runs).toBe(2);
    expect(errors).toEqual([new Error('Redis down')]);
    await periodic.close();
  });

  it('waits for the run in progress when closed, and runs no more', async () => {
    let finish = () => undefined as void;
    let runs = 0;
    const periodic = startPeriodic({
      intervalMs: 10,
      run: () => {
        runs++;
        return new Promise<void>((resolve) => (finish = resolve));
      },
      onError: () => undefined,
    });
    await vi.advanceTimersByTimeAsync(10);
    let closed = false;
    const closing = periodic.close().then(() => (closed = true));
    await vi.advanceTimersByTimeAsync(0);
    expect(closed).toBe(false);
    finish();
    await closing;
    await vi.advanceTimersByTimeAsync(100);
    expect(runs).toBe(1);
  });

  it('takes a synchronous run, and reports its throw like a rejection', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const periodic = startPeriodic({
      intervalMs: 10,
      run: () => {
        if (++runs === 1) throw new Error('disposed twice');
      },
      onError: (err) => errors.push(err),
    });
    await vi.advanceTimersByTimeAsync(20);
    expect(runs).toBe(2);
    expect(errors).toEqual([new Error('disposed twice')]);
    await periodic.close();
  });

  it('with fixedRate, starts runs every interval from the first, skipping a slot a run outlasts', async () => {
    const starts: number[] = [];
    const durations = [30, 150, 30];
    let active = 0;
    let most = 0;
    const periodic = startPeriodic({
      intervalMs: 100,
      fixedRate: true,
      run: async () => {
        starts.push(Date.now());
        most = Math.max(most, ++active);
        await new Promise((resolve) => setTimeout(resolve, durations[starts.length - 1] ?? 0));
        active--;
      },
      onError: () => undefined,
    });
    const start = Date.now();
    // 100: first; 200: the second (the first took 30); 300 passes during the second's 150; 400.
    await vi.advanceTimersByTimeAsync(450);
    expect(starts.map((t) => t - start)).toEqual([100, 200, 400]);
    expect(most).toBe(1);
    await vi.advanceTimersByTimeAsync(30);
    await periodic.close();
  });
});

describe('startPeriodic unref', () => {
  beforeEach(() => {
    vi.useRealTimers();
  });
  const timeouts = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

  it('keeps the process alive while waiting, unless unref is set', async () => {
    const before = timeouts();
    const held = startPeriodic({ intervalMs: 60_000, run: () => undefined, onError: () => undefined });
    expect(timeouts()).toBe(before + 1);
    await held.close();
    expect(timeouts()).toBe(before);
    const unrefd = startPeriodic({
      intervalMs: 60_000,
      unref: true,
      run: () => undefined,
      onError: () => undefined,
    });
    expect(timeouts()).toBe(before);
    await unrefd.close();
  });
});
