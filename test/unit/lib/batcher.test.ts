import { describe, expect, it } from 'vitest';
import { createBatcher } from '../../../src/lib/batcher.ts';

const deferred = () => {
  let resolve!: () => void;
  let reject!: (e: unknown) => void;
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
};

describe('micro-batcher', () => {
  it('writes the payloads of one event-loop turn as one batch', async () => {
    const batches: number[][] = [];
    const b = createBatcher<number>({
      write: (items) => (batches.push(items), Promise.resolve()),
      maxItems: 100,
      maxDelayMs: 0,
      timeoutMs: 1000,
    });
    await Promise.all([1, 2, 3].map((i) => b.submit(i)));
    expect(batches).toEqual([[1, 2, 3]]);
  });

  it('groups what arrives during a write into the next batch (group commit)', async () => {
    const batches: number[][] = [];
    const writes: ReturnType<typeof deferred>[] = [];
    const b = createBatcher<number>({
      write: (items) => {
        batches.push(items);
        const d = deferred();
        writes.push(d);
        return d.promise;
      },
      maxItems: 3,
      maxDelayMs: 0,
      timeoutMs: 1000,
    });
    const first = b.submit(1);
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([[1]]); // idle: written at once
    const rest = [2, 3, 4, 5, 6].map((i) => b.submit(i));
    await new Promise((r) => setImmediate(r));
    // 2, 3, 4 filled a batch; 5 and 6 wait for the write in flight
    expect(batches).toEqual([[1], [2, 3, 4]]);
    writes[0]!.resolve();
    writes[1]!.resolve();
    await first;
    await new Promise((r) => setImmediate(r));
    expect(batches).toEqual([[1], [2, 3, 4], [5, 6]]);
    writes[2]!.resolve();
    await Promise.all(rest);
  });

  it('flushes as soon as maxItems are waiting', async () => {
    const batches: number[][] = [];
    const b = createBatcher<number>({
      write: (items) => (batches.push(items), Promise.resolve()),
      maxItems: 2,
      maxDelayMs: 10_000,
      timeoutMs: 1000,
    });
    await Promise.all([b.submit(1), b.submit(2)]);
    expect(batches).toEqual([[1, 2]]);
  });

  it('resolves every submitter only after the write, and rejects them all with UNAVAILABLE when it fails', async () => {
    const write = deferred();
    const writing = deferred();
    const b = createBatcher<number>({
      write: () => (writing.resolve(), write.promise),
      maxItems: 10,
      maxDelayMs: 0,
      timeoutMs: 1000,
    });
    let settled = 0;
    const subs = [b.submit(1), b.submit(2)].map((p) => p.finally(() => settled++));
    await writing.promise;
    await new Promise((r) => setImmediate(r));
    expect(settled).toBe(0);
    write.reject(new Error('ECONNREFUSED'));
    for (const s of subs) await expect(s).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });

  it('gives up with UNAVAILABLE when the write takes longer than the timeout', async () => {
    const b = createBatcher<number>({
      write: () => new Promise(() => undefined),
      maxItems: 10,
      maxDelayMs: 0,
      timeoutMs: 20,
    });
    await expect(b.submit(1)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
  });

  it('writes pending payloads on close and refuses new ones after', async () => {
    const batches: number[][] = [];
    const b = createBatcher<number>({
      write: (items) => (batches.push(items), Promise.resolve()),
      maxItems: 10,
      maxDelayMs: 10_000,
      timeoutMs: 1000,
    });
    const pending = b.submit(1);
    await b.close();
    await pending;
    expect(batches).toEqual([[1]]);
    await expect(b.submit(2)).rejects.toMatchObject({ code: 'UNAVAILABLE' });
    await b.close();
  });
});
