import { afterEach, describe, expect, it, vi } from 'vitest';
import { schedulePasses } from '../../../src/scheduler/scheduled.ts';
import { captureLog } from '../../support/log-lines.ts';

afterEach(() => {
  vi.useRealTimers();
});

describe('schedulePasses', () => {
  it("logs a failed pass with its error's stack and cause, and passes again", async () => {
    vi.useFakeTimers();
    const { log, lines } = captureLog();
    let passes = 0;
    const cause = new Error('connect ECONNREFUSED 127.0.0.1:6379');
    const scheduled = schedulePasses({ intervalMs: 100, log }, 'availability check', () =>
      ++passes === 1 ? Promise.reject(new Error('Connection is closed.', { cause })) : Promise.resolve(),
    );
    await vi.advanceTimersByTimeAsync(200);
    await scheduled.close();
    expect(passes).toBe(2);
    const failed = lines.filter((l) => l.msg === 'availability check failed');
    expect(failed).toHaveLength(1);
    expect(failed[0]?.err).toMatchObject({
      type: 'Error',
      message: expect.stringContaining('Connection is closed.') as string,
      stack: expect.stringContaining('ECONNREFUSED') as string,
    });
  });
});
