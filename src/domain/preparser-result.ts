/**
 * The pre-parser result contract (docs/domain.md#pre-parser-results): `{deviceName, payload, time?}` or an array of
 * them. Each item becomes a reading or a logged problem of its own; one bad item does not spoil
 * its siblings.
 */

/** At most this many readings from one submission; beyond it the whole result is refused. */
export const MAX_PREPARSER_READINGS = 10_000;
/** A device time further ahead of the clock than this is refused. */
export const MAX_FUTURE_MS = 5 * 60_000;
/** Times before 1973-03-03 are almost surely epoch seconds by mistake. */
const MIN_PLAUSIBLE_MS = 100_000_000_000;

export interface PreparsedReading {
  ok: true;
  deviceName: string;
  /** What the definition parser receives as payloadStr (an object payload JSON-stringified). */
  payloadStr: string;
  /** Measurement time, epoch ms (whole milliseconds). */
  timeMs: number;
  /** True when the pre-parser supplied the time; false when the receive time is used. */
  deviceTime: boolean;
}

export interface PreparserProblem {
  ok: false;
  code: 'PREPARSER_BAD_RESULT' | 'FUTURE_TIMESTAMP' | 'INVALID_TIMESTAMP' | 'MISSING_DEVICE_NAME';
  message: string;
  deviceName: string | null;
}

export type PreparserItem = PreparsedReading | PreparserProblem;

/**
 * Turns what the pre-parser returned into readings. `receivedMs` is the gateway's receive time
 * (used when an item has no time), `nowMs` the clock for the future-time check. An empty array
 * gives no readings.
 */
export function normalisePreparserResult(
  result: unknown,
  receivedMs: number,
  nowMs: number,
): PreparserItem[] {
  if (!Array.isArray(result)) return [normaliseItem(result, null, receivedMs, nowMs)];
  if (result.length > MAX_PREPARSER_READINGS) {
    return [
      {
        ok: false,
        code: 'PREPARSER_BAD_RESULT',
        message: `returned ${result.length} readings; at most ${MAX_PREPARSER_READINGS} per submission`,
        deviceName: null,
      },
    ];
  }
  return (result as unknown[]).map((item, index) => normaliseItem(item, index, receivedMs, nowMs));
}

function normaliseItem(
  item: unknown,
  index: number | null,
  receivedMs: number,
  nowMs: number,
): PreparserItem {
  const where = index === null ? '' : `item ${index}: `;
  const bad = (code: PreparserProblem['code'], message: string, deviceName: string | null = null) =>
    ({ ok: false, code, message: where + message, deviceName }) satisfies PreparserProblem;

  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    return bad('PREPARSER_BAD_RESULT', `expected {deviceName, payload, time?}, got ${kindOf(item)}`);
  }
  const { deviceName, payload, time } = item as Record<string, unknown>;
  if (typeof deviceName !== 'string' || deviceName.trim() === '') {
    return bad('MISSING_DEVICE_NAME', `deviceName must be a non-empty string, got ${kindOf(deviceName)}`);
  }
  const payloadStr = payloadText(payload);
  if (payloadStr === null) {
    return bad(
      'PREPARSER_BAD_RESULT',
      `payload must be a string or an object, got ${kindOf(payload)}`,
      deviceName,
    );
  }
  if (time === undefined || time === null) {
    return { ok: true, deviceName, payloadStr, timeMs: receivedMs, deviceTime: false };
  }
  if (typeof time !== 'number' || !Number.isFinite(time)) {
    return bad('INVALID_TIMESTAMP', `time must be epoch milliseconds, got ${kindOf(time)}`, deviceName);
  }
  if (time < MIN_PLAUSIBLE_MS) {
    return bad('INVALID_TIMESTAMP', `time ${time} is not epoch milliseconds (seconds?)`, deviceName);
  }
  if (time > nowMs + MAX_FUTURE_MS) {
    const ahead = Math.round((time - nowMs) / 1000);
    return bad(
      'FUTURE_TIMESTAMP',
      `time ${time} is ${ahead} s in the future (at most 300 s allowed)`,
      deviceName,
    );
  }
  return { ok: true, deviceName, payloadStr, timeMs: Math.round(time), deviceTime: true };
}

function payloadText(payload: unknown): string | null {
  if (typeof payload === 'string') return payload;
  if (typeof payload !== 'object' || payload === null) return null;
  try {
    return JSON.stringify(payload);
  } catch {
    return null; // cycles or BigInt: cannot be a payload
  }
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (value === undefined) return 'nothing';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
