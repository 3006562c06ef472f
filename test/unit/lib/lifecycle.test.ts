import { afterEach, describe, expect, it, vi } from 'vitest';
import { createLifecycle } from '../../../src/lib/lifecycle.ts';
import { captureLog } from '../../support/log-lines.ts';

/** The error a promise rejected with; fails the test when it resolves. */
async function rejectionOf(p: Promise<unknown>): Promise<unknown> {
  return p.then(
    () => {
      throw new Error('resolved');
    },
    (err: unknown) => err,
  );
}

afterEach(() => {
  vi.useRealTimers();
});

describe('createLifecycle', () => {
  it('stops the steps last registered first', async () => {
    const { log } = captureLog();
    const stopped: string[] = [];
    const lifecycle = createLifecycle({ log });
    for (const name of ['redis', 'worker', 'server']) lifecycle.add(name, () => stopped.push(name));
    await lifecycle.close();
    expect(stopped).toEqual(['server', 'worker', 'redis']);
  });

  it('runs every step when some fail, logs each failure as { err }, and rejects with all of them', async () => {
    const { log, lines } = captureLog();
    const stopped: string[] = [];
    const lifecycle = createLifecycle({ log });
    const cause = new Error('connection reset');
    lifecycle.add('redis', () => stopped.push('redis'));
    lifecycle.add('queue', () => Promise.reject(new Error('queue gone', { cause })));
    lifecycle.add('worker', () => {
      throw new Error('worker stuck');
    });
    lifecycle.add('server', () => stopped.push('server'));

    const err = await rejectionOf(lifecycle.close());
    expect(stopped).toEqual(['server', 'redis']);
    expect(err).toBeInstanceOf(AggregateError);
    expect((err as AggregateError).errors.map((e: Error) => e.message)).toEqual([
      'worker stuck',
      'queue gone',
    ]);
    const failures = lines.filter((l) => l.msg === 'failed to stop cleanly');
    expect(failures.map((l) => l.step)).toEqual(['worker', 'queue']);
    const logged = failures[1]?.err as { message: string; stack: string };
    expect(logged.message).toContain('queue gone');
    expect(logged.stack).toContain('connection reset');
  });

  it('stops once, however often it is closed', async () => {
    const { log } = captureLog();
    const stop = vi.fn();
    const lifecycle = createLifecycle({ log });
    lifecycle.add('server', stop);
    const [first, second] = [lifecycle.close(), lifecycle.close()];
    expect(second).toBe(first);
    await first;
    await lifecycle.close();
    expect(stop).toHaveBeenCalledTimes(1);
  });

  it('leaves a step behind once its time is up and stops the next all the same', async () => {
    vi.useFakeTimers();
    const { log, lines } = captureLog();
    const stopped: string[] = [];
    const lifecycle = createLifecycle({ log });
    lifecycle.add('redis', () => stopped.push('redis'));
    lifecycle.add('deliveries', () => new Promise(() => undefined), { timeoutMs: 2000 });
    const closing = lifecycle.close();
    await vi.advanceTimersByTimeAsync(1999);
    expect(stopped).toEqual([]);
    await vi.advanceTimersByTimeAsync(1);
    await closing;
    expect(stopped).toEqual(['redis']);
    expect(lines.find((l) => l.step === 'deliveries')).toMatchObject({ timeoutMs: 2000, level: 40 });
  });

  it('stops a step registered while it is stopping', async () => {
    const { log } = captureLog();
    const stopped: string[] = [];
    const lifecycle = createLifecycle({ log });
    lifecycle.add('redis', () => stopped.push('redis'));
    lifecycle.add('role', () => {
      stopped.push('role');
      lifecycle.add('late part', () => stopped.push('late part'));
    });
    await lifecycle.close();
    expect(stopped).toEqual(['role', 'late part', 'redis']);
  });
});
