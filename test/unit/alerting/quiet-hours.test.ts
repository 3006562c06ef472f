import { describe, expect, it } from 'vitest';
import { parseQuietHours, quietUntil, type QuietHours } from '../../../src/alerting/quiet-hours.ts';

const span = (text: string, zone: string): QuietHours => {
  const q = parseQuietHours(text, zone);
  if (typeof q === 'string') throw new Error(q);
  return q;
};
const at = (iso: string) => Date.parse(iso);
const iso = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms).toISOString());

describe('quiet hours', () => {
  it.each([
    // [span, zone, now, end of the quiet span holding now (or undefined: not quiet)]
    ['22:00-07:00', 'UTC', '2026-03-10T23:30:00Z', '2026-03-11T07:00:00.000Z'],
    ['22:00-07:00', 'UTC', '2026-03-10T03:00:00Z', '2026-03-10T07:00:00.000Z'],
    ['22:00-07:00', 'UTC', '2026-03-10T07:00:00Z', undefined],
    ['22:00-07:00', 'UTC', '2026-03-10T21:59:59Z', undefined],
    ['22:00-07:00', 'UTC', '2026-03-10T22:00:00Z', '2026-03-11T07:00:00.000Z'],
    ['12:00-13:30', 'UTC', '2026-03-10T12:45:00Z', '2026-03-10T13:30:00.000Z'],
    ['12:00-13:30', 'UTC', '2026-03-10T11:45:00Z', undefined],
    // Amsterdam is UTC+1 in winter, UTC+2 in summer.
    ['22:00-07:00', 'Europe/Amsterdam', '2026-01-15T21:30:00Z', '2026-01-16T06:00:00.000Z'],
    ['22:00-07:00', 'Europe/Amsterdam', '2026-07-15T20:30:00Z', '2026-07-16T05:00:00.000Z'],
    ['22:00-07:00', 'Europe/Amsterdam', '2026-07-15T19:30:00Z', undefined],
    // The night the clocks go forward (29 March 2026, 02:00 → 03:00): the span still ends at 07:00 local.
    ['22:00-07:00', 'Europe/Amsterdam', '2026-03-28T23:00:00Z', '2026-03-29T05:00:00.000Z'],
    // End of month and of year roll over.
    ['23:00-01:00', 'UTC', '2026-12-31T23:30:00Z', '2027-01-01T01:00:00.000Z'],
    ['10:41:05-10:41:08', 'UTC', '2026-03-10T10:41:06Z', '2026-03-10T10:41:08.000Z'],
  ])('%s in %s at %s ends at %s', (text, zone, now, end) => {
    expect(iso(quietUntil(span(text, zone), at(now)))).toBe(end);
  });

  it.each([
    ['25:00-07:00', 'UTC', /expected HH:MM-HH:MM/],
    ['22:00', 'UTC', /expected HH:MM-HH:MM/],
    ['22:00-07:00-08:00', 'UTC', /expected HH:MM-HH:MM/],
    ['07:00-07:00', 'UTC', /the same/],
    ['22:00-07:00', 'Mars/Olympus', /unknown time zone/],
  ])('refuses %s in %s', (text, zone, reason) => {
    expect(parseQuietHours(text, zone)).toMatch(reason);
  });
});
