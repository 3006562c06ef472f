/**
 * Group commit: items from every caller are collected and written together, when `maxItems` are
 * waiting or after `maxDelayMs` (0 = on the next turn of the event loop). While a batch is being
 * written, new items wait for that write to finish and then go together (up to `maxItems` per
 * batch). At low load every item is written at once; under load batches grow by themselves, so
 * the number of writes — whose fixed cost dominates — stays small without a fixed delay that would
 * cap the rate. Used for the ingest queue (gateway micro-batches), the ingestion log and history.
 * Each submitter awaits its batch's write; if the write fails or takes longer than `timeoutMs`,
 * every submitter of that batch gets the error (by default AppError UNAVAILABLE), so no one hears
 * "accepted" for a payload that is not stored, and no one waits forever.
 */
import { AppError, isAppError } from '../errors/app-error.ts';

export interface Batcher<T> {
  /** Resolves once `item`'s batch is written; rejects with AppError UNAVAILABLE otherwise. */
  submit(item: T): Promise<void>;
  /** Stops accepting, writes what is pending and waits for writes in flight. Safe to call twice. */
  close(): Promise<void>;
}

interface Pending<T> {
  item: T;
  resolve(): void;
  reject(err: unknown): void;
}

export function createBatcher<T>(opts: {
  write(items: T[]): Promise<void>;
  maxItems: number;
  maxDelayMs: number;
  timeoutMs: number;
  onBatchWritten?(size: number): void;
  /** The error submitters get when a write fails (default: AppError UNAVAILABLE, "the queue …"). */
  failure?(err: unknown): Error;
  /** The error submitters get when a write takes longer than `timeoutMs` (default: the queue's). */
  timeoutError?(): Error;
}): Batcher<T> {
  let pending: Pending<T>[] = [];
  let timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  const inFlight = new Set<Promise<void>>();
  let closing: Promise<void> | undefined;

  const cancelTimer = () => {
    if (timer === undefined) return;
    if (opts.maxDelayMs > 0) clearTimeout(timer as NodeJS.Timeout);
    else clearImmediate(timer as NodeJS.Immediate);
    timer = undefined;
  };

  const flush = () => {
    cancelTimer();
    if (pending.length === 0) return;
    const batch = pending.slice(0, opts.maxItems);
    pending = pending.slice(batch.length);
    const written = writeWithTimeout(batch.map((p) => p.item)).then(
      () => {
        opts.onBatchWritten?.(batch.length);
        for (const p of batch) p.resolve();
      },
      (err: unknown) => {
        for (const p of batch) p.reject(err);
      },
    );
    inFlight.add(written);
    void written.finally(() => {
      inFlight.delete(written);
      // Group commit: what arrived during the write goes now, as one batch.
      if (inFlight.size === 0 && pending.length > 0) flush();
    });
  };

  const writeWithTimeout = async (items: T[]): Promise<void> => {
    let timeout: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        opts.write(items),
        new Promise<never>((_, reject) => {
          timeout = setTimeout(
            () =>
              reject(
                opts.timeoutError?.() ??
                  new AppError('UNAVAILABLE', 'The queue did not confirm the write in time.'),
              ),
            opts.timeoutMs,
          );
        }),
      ]);
    } catch (err) {
      if (opts.failure) throw opts.failure(err);
      throw isAppError(err)
        ? err
        : new AppError('UNAVAILABLE', 'The queue cannot be reached; try again later.', { cause: err });
    } finally {
      clearTimeout(timeout);
    }
  };

  return {
    submit(item) {
      if (closing) {
        return Promise.reject(new AppError('UNAVAILABLE', 'Ingestion is shutting down; try again later.'));
      }
      return new Promise<void>((resolve, reject) => {
        pending.push({ item, resolve, reject });
        if (pending.length >= opts.maxItems) flush();
        else if (inFlight.size > 0)
          return; // flushed when the write in flight finishes
        else if (timer === undefined) {
          timer = opts.maxDelayMs > 0 ? setTimeout(flush, opts.maxDelayMs) : setImmediate(flush);
        }
      });
    },
    close() {
      closing ??= (async () => {
        // Group commit may leave payloads waiting for a write in flight: drain until none is left.
        while (pending.length > 0 || inFlight.size > 0) {
          flush();
          await Promise.allSettled([...inFlight]);
        }
      })();
      return closing;
    },
  };
}
