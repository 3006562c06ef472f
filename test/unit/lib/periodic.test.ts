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
});
