/**
 * Routes decide which events go to which channels: filters on category, least status, device
 * (a glob) and data point. Returns to SUCCESS are sent only by routes that include them (so a
 * receiver can close its incident); every other status must reach the route's least status.
 * Pure: no I/O.
 */
import { z } from 'zod';
import { STATUSES, type EventRecord, type Status } from '../domain/types.ts';
import { formatDurationMs, parseDurationMs } from '../lib/duration.ts';
import { ALERTING_NAME } from './channel-spec.ts';
import { matchesGlob } from './device-glob.ts';
import { parseQuietHours, type QuietHours } from './quiet-hours.ts';

/** Shortest reminder interval by default (VIGIL_NOTIFY_MIN_REMIND_EVERY_MS). */
export const MIN_REMIND_EVERY_MS = 60_000;

const name = z.string().regex(ALERTING_NAME, "invalid name: use 1-64 letters, digits, '_', '.' and '-'");

/** The route schema, refusing reminders more often than every `minRemindEveryMs`. */
export const routeInputWith = (minRemindEveryMs: number) =>
  z
    .object({
      name,
      channels: z.array(name).min(1, 'give at least one channel').max(20),
      category: z.enum(['Sensors', 'Availability']).optional(),
      minStatus: z.enum(['INFO', 'WARNING', 'ERROR', 'CRITICAL']).optional(),
      /** Device name glob: `*` any characters, `?` one. */
      device: z.string().min(1).max(128).optional(),
      sensor: z.string().min(1).max(128).optional(),
      includeSuccess: z.boolean().default(false),
      remindEvery: z.string().optional(),
      quietHours: z.string().optional(),
      timeZone: z.string().optional(),
    })
    .strict()
    .transform((r, ctx) => {
      const remindEveryMs = r.remindEvery === undefined ? undefined : parseDurationMs(r.remindEvery);
      if (r.remindEvery !== undefined && (remindEveryMs === undefined || remindEveryMs < minRemindEveryMs)) {
        ctx.addIssue({
          code: 'custom',
          path: ['remindEvery'],
          message: `expected a duration of at least ${formatDurationMs(minRemindEveryMs)}, such as 30m, 1h or 1d`,
        });
        return z.NEVER;
      }
      if (r.timeZone !== undefined && r.quietHours === undefined) {
        ctx.addIssue({ code: 'custom', path: ['timeZone'], message: 'a time zone needs quiet hours' });
        return z.NEVER;
      }
      const quiet =
        r.quietHours === undefined ? undefined : parseQuietHours(r.quietHours, r.timeZone ?? 'UTC');
      if (typeof quiet === 'string') {
        ctx.addIssue({ code: 'custom', path: ['quietHours'], message: quiet });
        return z.NEVER;
      }
      const { remindEvery: _r, quietHours: _q, timeZone: _t, ...rest } = r;
      return {
        ...rest,
        channels: [...new Set(r.channels)],
        ...(remindEveryMs === undefined ? {} : { remindEveryMs }),
        ...(quiet === undefined ? {} : { quietHours: quiet }),
      };
    });
export const routeInput = routeInputWith(MIN_REMIND_EVERY_MS);
export type RouteInput = z.input<typeof routeInput>;
export type CheckedRouteInput = z.output<typeof routeInput>;

/** A route as stored in `AlertingKeys.routes`. */
export type RouteRecord = CheckedRouteInput & {
  /** Random, fixed for the route's life. */
  id: string;
  createdUTC: string;
  /** While an alarm it notified stays open and unacknowledged, a reminder this often (reminders.ts). */
  remindEveryMs?: number;
  quietHours?: QuietHours;
};

const severity = (s: Status): number => STATUSES.indexOf(s);

/** A route's filter, compiled once per route. */
export function routeFilter(route: RouteRecord): (event: EventRecord) => boolean {
  const least = route.minStatus === undefined ? undefined : severity(route.minStatus);
  return (event) => {
    if (route.category !== undefined && event.eventCategory !== route.category) return false;
    if (route.sensor !== undefined && event.sensorName !== route.sensor) return false;
    if (route.device !== undefined && !matchesGlob(route.device, event.deviceName)) return false;
    if (event.eventStatus === 'SUCCESS') return route.includeSuccess;
    return least === undefined || severity(event.eventStatus) >= least;
  };
}
