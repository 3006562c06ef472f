/**
 * Reminders: while an alarm stays open and unacknowledged, a route with `remindEveryMs` sends each
 * of its channels a `reminder` of the event that set the alarm's status, once per interval. Each
 * reminder is a delayed BullMQ job. The first is planned with the event's notification; when one
 * comes due it looks at the alarm and the route, plans the next, and is delivered. Acknowledging
 * or closing the alarm, a new status (whose event starts reminders of its own when a route asks),
 * or a route that no longer asks for them ends the chain: the reminder that comes due finds it so
 * and sends nothing. A reminder due in its route's quiet hours is skipped, and the chain goes on.
 */
import type { EventRecord } from '../domain/types.ts';
import type { Redis } from '../redis/connect.ts';
import { createAlarmIndex } from '../state/alarm-index.ts';
import type { StateKeys } from '../state/state-keys.ts';
import type { Catalog } from '../tenancy/catalog.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import { notificationId, type NotificationJob, type PlannedNotification } from './notification.ts';
import { quietUntil } from './quiet-hours.ts';
import { filtersOnLabels, routeFilter, type DeviceLabels, type RouteRecord } from './route-spec.ts';

/** A route that reminds: its interval is set. */
export type RemindingRoute = RouteRecord & { remindEveryMs: number };

export const isReminding = (route: RouteRecord): route is RemindingRoute =>
  route.remindEveryMs !== undefined && route.remindEveryMs > 0;

/**
 * Reminder `sequence` (from 1) of `event` on a channel, due `remindEveryMs` after `nowMs`. Its id
 * derives from event, route, channel and sequence, so planning it twice enqueues it once.
 */
export function reminderJob(
  env: string,
  channel: { id: string; name: string },
  route: RemindingRoute,
  event: EventRecord,
  sequence: number,
  nowMs: number,
): PlannedNotification {
  const data: NotificationJob = {
    env,
    channelId: channel.id,
    channelName: channel.name,
    kind: 'reminder',
    event,
    route: { name: route.name, id: route.id },
    reminder: sequence,
    subjectMs: nowMs + route.remindEveryMs,
  };
  return {
    id: notificationId('reminder', channel.id, `${event.id}\n${route.id}\n${sequence}`),
    data,
    delayMs: route.remindEveryMs,
  };
}

/**
 * What a reminder that came due does: plan the next (`next`) unless its chain ends, and be sent
 * or not (`reason` says why not).
 */
export type ReminderDecision =
  { send: true; next: PlannedNotification } | { send: false; next?: PlannedNotification; reason: string };

/** Decides, when a reminder comes due, whether its alarm still calls for it. */
export function createReminderCheck(deps: {
  redis: Redis;
  keys: AlertingKeys & StateKeys;
  /** The event's device, for a route that filters on labels (the router's catalog). */
  devices: Catalog['devices'];
}): (data: NotificationJob, nowMs: number) => Promise<ReminderDecision> {
  const { redis, keys } = deps;
  const alarms = createAlarmIndex(redis, keys);
  const end = (reason: string): ReminderDecision => ({ send: false, reason });

  async function routeOf(data: NotificationJob): Promise<RemindingRoute | undefined> {
    if (!data.route) return undefined;
    const json = await redis.hget(keys.routes(data.env), data.route.name);
    const route = json === null ? undefined : (JSON.parse(json) as RouteRecord);
    if (route?.id !== data.route.id || !isReminding(route)) return undefined;
    return route;
  }

  /** The device's labels as they are now, read only for a route that asks for some. */
  async function labelsFor(route: RouteRecord, env: string, device: string): Promise<DeviceLabels> {
    if (!filtersOnLabels(route)) return {};
    return (await deps.devices(env, [device])).get(device)?.labels ?? {};
  }

  return async (data, nowMs) => {
    const event = data.event;
    if (!event) return end('no event');
    const sensor = event.eventCategory === 'Availability' ? null : event.sensorName;
    const alarm = await alarms.get(data.env, event.deviceName, sensor);
    if (!alarm) return end('the alarm is closed');
    if (alarm.acknowledgement) return end('the alarm is acknowledged');
    if (alarm.event?.id !== event.id) return end('the alarm changed status');
    const route = await routeOf(data);
    if (
      !route ||
      !route.channels.includes(data.channelName) ||
      !routeFilter(route)(event, await labelsFor(route, data.env, event.deviceName))
    )
      return end('the route no longer asks for reminders of it');
    const channel = { id: data.channelId, name: data.channelName };
    const next = reminderJob(data.env, channel, route, event, (data.reminder ?? 1) + 1, nowMs);
    // Quiet hours skip a reminder; the next one comes as planned.
    if (route.quietHours && quietUntil(route.quietHours, nowMs) !== undefined)
      return { send: false, next, reason: 'quiet hours' };
    return { send: true, next };
  };
}
