import { describe, expect, it } from 'vitest';
import { eventually } from '../../support/eventually.ts';

describe('eventually', () => {
  it('returns the first truthy value, checking again until then', async () => {
    let calls = 0;
    const value = await eventually(() => (++calls >= 3 ? { calls } : undefined), { intervalMs: 1 });
    expect(value).toEqual({ calls: 3 });
  });

  it('returns the value `until` accepts, falsy or not, and retries a check that throws', async () => {
    let calls = 0;
    const value = await eventually(
      () => {
        calls += 1;
        if (calls === 1) throw new Error('not ready');
        return 3 - calls;
      },
      { until: (n) => n === 0, intervalMs: 1 },
    );
    expect(value).toBe(0);
    expect(calls).toBe(3);
  });

  it('fails after the timeout naming what it waited for and the last value seen', async () => {
    let n = 0;
    await expect(
      eventually(async () => Promise.resolve({ n: ++n, ready: false }), {
        until: (v) => v.ready,
        timeoutMs: 30,
        intervalMs: 5,
        message: 'the device to report',
      }),
    ).rejects.toThrow(/waiting for the device to report; last seen: \{ n: \d+, ready: false \}/);
  });

  it('fails with the last error when the check kept throwing', async () => {
    await expect(
      eventually(
        () => {
          throw new Error('connection refused');
        },
        { timeoutMs: 20, intervalMs: 5 },
      ),
    ).rejects.toThrow(/waiting for the condition; last seen: error connection refused/);
  });
});
