import { describe, expect, it } from 'vitest';
import { lateHourField, parseLateHourField, rollupWindowStartMs } from '../../../src/history/late-hours.ts';

const H = 3_600_000;
const M = 60_000;
const DAY = Date.UTC(2026, 10, 20);
const at = (hours: number, minutes = 0, ms = 0) => DAY + hours * H + minutes * M + ms;

describe('the rollup query window', () => {
  it.each([
    // written at, RESAMPLE EVERY, oldest hour the next run recomputes
    ['10:30, every hour: the 11:00 run covers 09:00 and 10:00', at(10, 30), H, at(9)],
    ['10:00 sharp, every hour: that very run covers 08:00 and 09:00', at(10), H, at(8)],
    ['10:00 and 1 ms, every hour: the 11:00 run', at(10, 0, 1), H, at(9)],
    ['10:30, every minute: the 10:31 run covers 09:00 on', at(10, 30), M, at(9)],
    ['10:59:30, every minute: the 11:00 run covers 09:00 on', at(10, 59, 30_000), M, at(9)],
    ['10:59:30, every 10 minutes: the 11:00 run', at(10, 59, 30_000), 10 * M, at(9)],
    ['10:30, every 2 hours: the 12:00 run covers 10:00 only', at(10, 30), 2 * H, at(10)],
    ['10:30, every 7 hours (not a divisor of a day): at most 7 h later', at(10, 30), 7 * H, at(16)],
  ])('%s', (_, writtenMs, everyMs, startMs) => {
    expect(rollupWindowStartMs(writtenMs, everyMs)).toBe(startMs);
  });
});

describe('late hour fields', () => {
  it('read back as the hour they were made of, whatever the names', () => {
    for (const names of [
      { env: 'acme', device: 'd1', sensor: 'Temperature' },
      { env: 'constructor', device: '__proto__', sensor: 'a b|c' },
    ]) {
      const hour = { ...names, hourMs: at(5) };
      expect(parseLateHourField(lateHourField(hour))).toEqual(hour);
    }
  });

  it('refuse fields of another shape', () => {
    for (const field of ['', 'a\nb\nc', 'a\nb\nc\nnot-a-number', `a\nb\nc\n${at(5) + 1}`, 'a\nb\nc\nd\n0'])
      expect(parseLateHourField(field)).toBeNull();
  });
});
