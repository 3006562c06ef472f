/**
 * Turns events read from the outbox into notification jobs: each event goes through its
 * environment's routes, with its device's labels when a route of the environment filters on them
 * (read through the catalog, as the worker reads the device whose display name the event carries);
 * a matching route in its quiet hours holds the event for each of its channels (one digest when
 * they end), otherwise each channel gets it once (however many routes name it), subject to the
 * channel's flood control. A route that reminds also plans the first reminder of the event for
 * each of its channels (reminders.ts). Job ids derive from event, channel and kind, so a batch
 * routed again after a crash enqueues nothing new.
 */
import type { EventRecord } from '../domain/types.ts';
import type { OutboxEntry } from '../events/outbox-consumer.ts';
import type { Logger } from '../log/logger.ts';
import type { TrackedHashes } from '../redis/tracked-hashes.ts';
import type { Catalog } from '../tenancy/catalog.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import type { ChannelRecord } from './channel-spec.ts';
import type { Admission, DigestBatches } from './digest-batches.ts';
import { notificationId, type PlannedNotification } from './notification.ts';
import { quietUntil } from './quiet-hours.ts';
import { isReminding, reminderJob, type RemindingRoute } from './reminders.ts';
import { filtersOnLabels, routeFilter, type DeviceLabels, type RouteRecord } from './route-spec.ts';

interface Channel {
  id: string;
  name: string;
}

interface CompiledRoute {
  record: RouteRecord;
  matches: (e: EventRecord, labels: DeviceLabels) => boolean;
}

/** An environment's routes, compiled, and its channels by name. */
interface Plan {
  routes: CompiledRoute[];
  channels: Map<string, Channel>;
  /** Whether a route filters on labels: only then are the events' devices read. */
  needsLabels: boolean;
}

const NO_LABELS: DeviceLabels = Object.freeze({});

export interface RouterDeps {
  /** Routes and channels, read through the notifier's client-side cache. */
  hashes: Pick<TrackedHashes, 'hgetall'>;
  keys: AlertingKeys;
  /** The devices of events, for their labels: the catalog (cached VIGIL_CATALOG_CACHE_MS). */
  devices: Catalog['devices'];
  batches: DigestBatches;
  enqueue(jobs: PlannedNotification[]): Promise<void>;
  log: Logger;
  clock?: () => number;
}

export function createNotificationRouter(deps: RouterDeps): (entries: OutboxEntry[]) => Promise<void> {
  const { hashes, keys, batches, log } = deps;
  const clock = deps.clock ?? Date.now;

  /** Per environment: its routes and channels as last read, and what they compiled to. */
  const loaded = new Map<
    string,
    { routes: Record<string, string>; channels: Record<string, string>; plan: Plan }
  >();
  const sameTexts = (a: Record<string, string>, b: Record<string, string>) => {
    if (a === b) return true; // kept by the client-side cache, unchanged
    const keysA = Object.keys(a);
    return keysA.length === Object.keys(b).length && keysA.every((k) => a[k] === b[k]);
  };

  /**
   * The environment's routes and channels, read at every batch (a change applies to the next
   * event) and compiled again only when what is stored changed: a route's device glob is a
   * regular expression to build, and an environment may have hundreds of routes.
   */
  async function load(env: string): Promise<Plan> {
    const [routes, channels] = await Promise.all([
      hashes.hgetall(keys.routes(env)),
      hashes.hgetall(keys.channels(env)),
    ]);
    const last = loaded.get(env);
    if (last && sameTexts(last.routes, routes) && sameTexts(last.channels, channels)) return last.plan;
    const compiled = Object.values(routes).map((json): CompiledRoute => {
      const record = JSON.parse(json) as RouteRecord;
      return { record, matches: routeFilter(record) };
    });
    const byName = new Map<string, Channel>();
    for (const json of Object.values(channels)) {
      const c = JSON.parse(json) as ChannelRecord;
      byName.set(c.name, { id: c.id, name: c.name });
    }
    const plan = {
      routes: compiled,
      channels: byName,
      needsLabels: compiled.some((r) => filtersOnLabels(r.record)),
    };
    loaded.set(env, { routes, channels, plan });
    return plan;
  }

  const eventJob = (env: string, channel: Channel, event: EventRecord): PlannedNotification => ({
    id: notificationId('event', channel.id, event.id),
    data: {
      env,
      channelId: channel.id,
      channelName: channel.name,
      kind: 'event',
      event,
      subjectMs: event.receivedMs,
    },
    delayMs: 0,
  });

  function toJob(
    env: string,
    channel: Channel,
    event: EventRecord,
    admission: Admission,
  ): PlannedNotification {
    if (admission.action === 'send') return eventJob(env, channel, event);
    const { batchId, dueMs, nowMs } = admission;
    return {
      id: notificationId('digest', channel.id, batchId),
      data: {
        env,
        channelId: channel.id,
        channelName: channel.name,
        kind: 'digest',
        batchId,
        subjectMs: dueMs,
      },
      delayMs: Math.max(dueMs - nowMs, 0),
    };
  }

  /** The jobs one event makes in its environment. */
  async function routeEvent(
    env: string,
    event: EventRecord,
    labels: DeviceLabels,
    routes: CompiledRoute[],
    channels: Map<string, Channel>,
  ) {
    const now = new Map<string, Channel>();
    const admissions: Promise<PlannedNotification>[] = [];
    // Per channel, the route that reminds of the event most often.
    const reminding = new Map<string, { channel: Channel; route: RemindingRoute }>();
    for (const { record, matches } of routes) {
      if (!matches(event, labels)) continue;
      const until = record.quietHours ? quietUntil(record.quietHours, clock()) : undefined;
      for (const name of record.channels) {
        const channel = channels.get(name);
        if (!channel) {
          log.warn({ env, route: record.name, channel: name }, 'route names a channel that does not exist');
          continue;
        }
        const shortest = reminding.get(channel.id)?.route.remindEveryMs ?? Infinity;
        if (isReminding(record) && event.eventStatus !== 'SUCCESS' && record.remindEveryMs < shortest)
          reminding.set(channel.id, { channel, route: record });
        if (until === undefined) {
          now.set(channel.id, channel);
          continue;
        }
        const batchId = `quiet-${record.id}-${channel.id}-${until}`;
        admissions.push(
          batches.hold(env, channel.id, batchId, until, event).then(async (a) =>
            // A sealed batch (its digest went out already): the quiet hours are over, send it as usual.
            a.action === 'send'
              ? toJob(env, channel, event, await batches.admit(env, channel.id, event))
              : toJob(env, channel, event, a),
          ),
        );
      }
    }
    for (const channel of now.values()) {
      admissions.push(batches.admit(env, channel.id, event).then((a) => toJob(env, channel, event, a)));
    }
    const reminders = [...reminding.values()].map(({ channel, route }) =>
      reminderJob(env, channel, route, event, 1, clock()),
    );
    return [...(await Promise.all(admissions)), ...reminders];
  }

  return async (entries) => {
    const byEnv = new Map<string, EventRecord[]>();
    for (const { event } of entries) {
      const list = byEnv.get(event.env) ?? [];
      list.push(event);
      byEnv.set(event.env, list);
    }
    const jobs: PlannedNotification[] = [];
    for (const [env, events] of byEnv) {
      const { routes, channels, needsLabels } = await load(env);
      if (routes.length === 0) continue;
      // A device deleted since its event has no labels: a route that asks for some does not match.
      const devices = needsLabels
        ? await deps.devices(
            env,
            events.map((e) => e.deviceName),
          )
        : undefined;
      const labelsOf = (e: EventRecord) => devices?.get(e.deviceName)?.labels ?? NO_LABELS;
      const planned = await Promise.all(events.map((e) => routeEvent(env, e, labelsOf(e), routes, channels)));
      jobs.push(...planned.flat());
    }
    if (jobs.length > 0) await deps.enqueue(jobs);
  };
}
