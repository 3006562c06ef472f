/**
 * Routes decide which events go to which channels: filters on category, least status, device
 * (a glob), data point and the device's labels (every one given must be the device's). Returns to SUCCESS are sent only by routes that include them (so a
 * receiver can close its incident); every other status must reach the route's least status.
 * Pure: no I/O.
 */
import { z } from 'zod';
import { labelsProblem } from '../domain/identifiers.ts';
import { STATUSES, type EventRecord, type Status } from '../domain/types.ts';
import { formatDurationMs, parseDurationMs } from '../lib/duration.ts';
import { ALERTING_NAME } from './channel-spec.ts';
import { matchesGlob } from './device-glob.ts';
import { parseQuietHours, type QuietHours } from './quiet-hours.ts';

/** Shortest reminder interval by default (VIGIL_NOTIFY_MIN_REMIND_EVERY_MS). */
export const MIN_REMIND_EVERY_MS = 60_000;

const name = z.string().regex(ALERTING_NAME, "invalid name: use 1-64 letters, digits, '_', '.' and '-'");

/** Labels a route asks of the device, as a device's labels are written (domain/identifiers.ts). */
const labels = z.record(z.string(), z.string()).superRefine((value, ctx) => {
  const problem = labelsProblem(value);
  if (problem !== undefined) ctx.addIssue({ code: 'custom', message: problem });
});

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
      /** Labels the device must have, each with this value (`{site: amsterdam}`). */
      labels: labels.optional(),
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
      const { remindEvery: _r, quietHours: _q, timeZone: _t, labels: wanted, ...rest } = r;
      return {
        ...rest,
        // None asked is no label filter; kept sorted by key, so that an unchanged file compares equal.
        ...(wanted === undefined || Object.keys(wanted).length === 0 ? {} : { labels: sortedLabels(wanted) }),
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

function sortedLabels(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/** The labels of an event's device, as the router finds them ({} when it has none or is gone). */
export type DeviceLabels = Readonly<Record<string, string>>;

/** Whether a route filters on labels: its events need their device's labels to be decided. */
export const filtersOnLabels = (route: RouteRecord): boolean =>
  route.labels !== undefined && Object.keys(route.labels).length > 0;

/** A route's filter, compiled once per route: the event, and the labels of its device. */
export function routeFilter(route: RouteRecord): (event: EventRecord, labels: DeviceLabels) => boolean {
  const least = route.minStatus === undefined ? undefined : severity(route.minStatus);
  const wanted = Object.entries(route.labels ?? {});
  return (event, labels) => {
    if (route.category !== undefined && event.eventCategory !== route.category) return false;
    if (route.sensor !== undefined && event.sensorName !== route.sensor) return false;
    if (route.device !== undefined && !matchesGlob(route.device, event.deviceName)) return false;
    // Own properties only: a label key such as `constructor` must not find Object.prototype's members.
    if (!wanted.every(([k, v]) => Object.hasOwn(labels, k) && labels[k] === v)) return false;
    if (event.eventStatus === 'SUCCESS') return route.includeSuccess;
    return least === undefined || severity(event.eventStatus) >= least;
  };
}
