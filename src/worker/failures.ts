/**
 * Processing that fails on the data of one payload or one device: an exception in a phase of the
 * step (a parser result, a definition or a value the code does not handle) or the state script
 * refusing a device. Such a fault would recur on every retry, so it must not fail the step, which
 * would hold up every other device of its queue partition: the payloads concerned fail alone
 * (OutcomeLog.failed, then the dead-letter stream) and a warning names the environment and device,
 * never the payload.
 */
import type { IngestItem } from '../domain/ingest-item.ts';
import type { OutcomeLog } from './outcomes.ts';
import type { Reading } from './readings.ts';

/** Longest error text kept in a dead-letter reason (the log takes the error itself). */
const REASON_MAX_CHARS = 300;

export interface Failures {
  /** One payload failed, before or without a device (pre-parsing). */
  payload: (item: IngestItem, deviceName: string | null, err: unknown) => void;
  /** One reading failed: its payload fails. */
  reading: (r: Reading, err: unknown) => void;
  /** Everything of one device in the step failed: the payloads of all its readings fail. */
  device: (readings: readonly Reading[], err: unknown) => void;
}

export function createFailures(
  outcomes: OutcomeLog,
  warn: (fields: Record<string, unknown>) => void,
): Failures {
  const fail = (env: string, deviceName: string | null, items: Iterable<IngestItem>, err: unknown) => {
    const text = errorText(err);
    const reason = `${env}/${deviceName ?? '(no device)'}: ${text}`;
    let payloads = 0;
    for (const item of items) {
      outcomes.failed(item, reason, deviceName);
      payloads += 1;
    }
    warn({ env, device: deviceName, payloads, err });
  };
  return {
    payload: (item, deviceName, err) => fail(item.env, deviceName, [item], err),
    reading: (r, err) => fail(r.item.env, r.deviceName, [r.item], err),
    device: (readings, err) => {
      const first = readings[0];
      if (first) fail(first.item.env, first.deviceName, new Set(readings.map((r) => r.item)), err);
    },
  };
}

function errorText(err: unknown): string {
  const text = err instanceof Error ? `${err.name}: ${err.message}` : `thrown: ${typeof err}`;
  return text.length > REASON_MAX_CHARS ? `${text.slice(0, REASON_MAX_CHARS)}…` : text;
}
