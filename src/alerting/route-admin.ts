/**
 * Administration of an environment's routes, for the `vigil route` commands and provisioning.
 * A route names channels that must exist (in Redis, or earlier in the same provisioning run).
 * Creating a route also creates the notifier's reader of the event outbox, so events from then
 * on wait for the notifier even if it has never run yet.
 */
import { randomBytes } from 'node:crypto';
import { AppError } from '../errors/app-error.ts';
import type { EventKeys } from '../events/event-keys.ts';
import { ensureOutboxGroup } from '../events/outbox-consumer.ts';
import type { AdminContext } from '../tenancy/admin-support.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import { invalidInput } from './channel-admin.ts';
import { NOTIFIER_GROUP } from './notification.ts';
import { MIN_REMIND_EVERY_MS, routeInputWith, type RouteInput, type RouteRecord } from './route-spec.ts';

export interface RouteView {
  name: string;
  channels: string[];
  filter: string;
  /** The labels the device must have ({} when the route does not filter on labels). */
  labels: Record<string, string>;
  remindEvery: number | null;
  quietHours: string | null;
  createdUTC: string;
}

const notFound = (env: string, name: string) =>
  new AppError('ROUTE_NOT_FOUND', `no route ${JSON.stringify(name)} in ${env}`);

export function parseRoute(input: RouteInput, minRemindEveryMs = MIN_REMIND_EVERY_MS) {
  const parsed = routeInputWith(minRemindEveryMs).safeParse(input);
  if (!parsed.success) throw invalidInput(`route ${String(input.name)}`, parsed.error);
  return parsed.data;
}

/**
 * The filter in words: `Sensors, WARNING and above, device sensor-*, data point Temperature,
 * labels site=amsterdam, with returns to SUCCESS`.
 */
export function describeFilter(r: RouteRecord): string {
  const labels = Object.entries(r.labels ?? {}).map(([k, v]) => `${k}=${v}`);
  const parts = [
    r.category ?? 'all categories',
    r.minStatus ? `${r.minStatus} and above` : 'every status',
    ...(r.device ? [`device ${r.device}`] : []),
    ...(r.sensor ? [`data point ${r.sensor}`] : []),
    ...(labels.length > 0 ? [`labels ${labels.join(' ')}`] : []),
    r.includeSuccess ? 'with returns to SUCCESS' : 'without returns to SUCCESS',
  ];
  return parts.join(', ');
}

function viewRoute(r: RouteRecord): RouteView {
  const q = r.quietHours;
  return {
    name: r.name,
    channels: r.channels,
    filter: describeFilter(r),
    labels: { ...r.labels },
    remindEvery: r.remindEveryMs ?? null,
    quietHours: q ? `${q.from}-${q.to} ${q.timeZone}` : null,
    createdUTC: r.createdUTC,
  };
}

export function createRouteAdmin(deps: {
  ctx: AdminContext;
  keys: AlertingKeys & EventKeys;
  /** Shortest `remindEvery` accepted (VIGIL_NOTIFY_MIN_REMIND_EVERY_MS). */
  minRemindEveryMs?: number;
}) {
  const { ctx, keys } = deps;
  const { redis } = ctx;
  const check = (input: RouteInput) => parseRoute(input, deps.minRemindEveryMs);

  async function requireChannels(env: string, names: string[], alsoKnown: ReadonlySet<string>) {
    const exists = await Promise.all(names.map((n) => redis.hexists(keys.channels(env), n)));
    const missing = names.filter((n, i) => !exists[i] && !alsoKnown.has(n));
    if (missing.length > 0)
      throw new AppError('CHANNEL_NOT_FOUND', `no channel ${missing.join(', ')} in ${env}`);
  }

  return {
    async createRoute(env: string, input: RouteInput) {
      await ctx.requireEnv(env);
      const checked = check(input);
      const record: RouteRecord = {
        ...checked,
        id: randomBytes(6).toString('hex'),
        createdUTC: ctx.nowUTC(),
      };
      await ctx.atomically(
        [keys.channels(env), keys.routes(env)],
        async () => {
          await requireChannels(env, checked.channels, new Set());
          if (await redis.hexists(keys.routes(env), checked.name)) {
            throw new AppError('ALREADY_EXISTS', `route ${checked.name} exists already in ${env}`);
          }
        },
        (m) => m.hset(keys.routes(env), checked.name, JSON.stringify(record)),
      );
      await ensureOutboxGroup(redis, keys, NOTIFIER_GROUP);
      return viewRoute(record);
    },

    /** Checks a route for provisioning; `channelsInFiles` may not exist yet in Redis. */
    async checkRoute(env: string, input: RouteInput, channelsInFiles: ReadonlySet<string>) {
      const checked = check(input);
      if (await redis.sismember(ctx.keys.envs(), env))
        await requireChannels(env, checked.channels, channelsInFiles);
      else {
        const missing = checked.channels.filter((c) => !channelsInFiles.has(c));
        if (missing.length > 0)
          throw new AppError('CHANNEL_NOT_FOUND', `no channel ${missing.join(', ')} in ${env}`);
      }
      return checked;
    },

    /** Provisioning's create-or-update; true when something changed. */
    async putRoute(env: string, input: RouteInput): Promise<boolean> {
      const checked = check(input);
      const json = await redis.hget(keys.routes(env), checked.name);
      const existing = json === null ? undefined : (JSON.parse(json) as RouteRecord);
      if (existing) {
        const { id: _id, createdUTC: _c, ...rest } = existing;
        if (JSON.stringify(rest) === JSON.stringify(checked)) return false;
      }
      const record: RouteRecord = {
        ...checked,
        id: existing?.id ?? randomBytes(6).toString('hex'),
        createdUTC: existing?.createdUTC ?? ctx.nowUTC(),
      };
      await redis.hset(keys.routes(env), checked.name, JSON.stringify(record));
      await ensureOutboxGroup(redis, keys, NOTIFIER_GROUP);
      return true;
    },

    async listRoutes(env: string): Promise<RouteView[]> {
      await ctx.requireEnv(env);
      const all = Object.values(await redis.hgetall(keys.routes(env))).map(
        (j) => JSON.parse(j) as RouteRecord,
      );
      return all.sort((a, b) => a.name.localeCompare(b.name)).map(viewRoute);
    },

    /** The route as listed; ROUTE_NOT_FOUND when the environment has none of that name. */
    async getRoute(env: string, name: string): Promise<RouteView> {
      await ctx.requireEnv(env);
      const json = await redis.hget(keys.routes(env), name);
      if (json === null) throw notFound(env, name);
      return viewRoute(JSON.parse(json) as RouteRecord);
    },

    async deleteRoute(env: string, name: string) {
      await ctx.requireEnv(env);
      if (!(await redis.hdel(keys.routes(env), name))) throw notFound(env, name);
      return { env, name, deleted: true };
    },
  };
}

export type RouteAdmin = ReturnType<typeof createRouteAdmin>;
