/**
 * The administration of alerting as the `vigil` command and provisioning use it: channels,
 * routes, failed notifications, the delivery log, channel tests and the audit log, built from the
 * configuration. Every change of a channel or route is recorded in the audit log, by `actor`.
 * `close()` releases what it opened (the BullMQ queue, delivery connections).
 */
import type { Config } from '../config/schema.ts';
import { settingSource } from '../config/setting-source.ts';
import type { EventKeys } from '../events/event-keys.ts';
import type { Redis } from '../redis/connect.ts';
import type { Connections } from '../redis/connections.ts';
import { createAdminContext, type AdminDeps } from '../tenancy/admin-support.ts';
import { createAddressGuard } from './address-guard.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import type { AuditKeys } from '../audit/audit-keys.ts';
import { cliActor, createAuditLog, type AuditAction, type AuditLog } from '../audit/audit-log.ts';
import { createChannelAdmin, type ChannelAdmin } from './channel-admin.ts';
import { deliverTo } from './deliverer.ts';
import { createChannelDeliverers } from './delivery/create-deliverers.ts';
import { createDeliveryLog } from './delivery-log.ts';
import {
  openNotificationQueue,
  retryPolicyOf,
  type NotificationQueue,
  type RetryPolicyConfig,
} from './notification-queue.ts';
import { createNotifyAdmin } from './notify-admin.ts';
import { createRouteAdmin, type RouteAdmin } from './route-admin.ts';
import { createSecretBox } from './secret-box.ts';

/** The settings alerting's administration reads. */
export type AlertingAdminConfig = RetryPolicyConfig &
  Pick<
    Config,
    | 'auditRetentionDays'
    | 'secretsKey'
    | 'notifyAllowedHosts'
    | 'notifyTimeoutMs'
    | 'smtpUrl'
    | 'smtpFrom'
    | 'notifySecretGraceSeconds'
    | 'notifyMinRemindEveryMs'
    | 'notifyLogSize'
  >;

export function createAlertingAdmin(deps: {
  admin: AdminDeps;
  keys: AlertingKeys & EventKeys & AuditKeys;
  config: AlertingAdminConfig;
  /** Where the notification queue's connection comes from, opened on first use. */
  connections: Connections;
  /** Who makes the changes, for the audit log; the OS user of the `vigil` command by default. */
  actor?: string;
}) {
  const { config, keys } = deps;
  const ctx = createAdminContext(deps.admin);
  const audit = createAuditLog({
    redis: ctx.redis,
    keys,
    retentionMs: config.auditRetentionDays * 86_400_000,
  });
  const box = createSecretBox(config.secretsKey, settingSource(config, 'secretsKey'));
  const guard = createAddressGuard({ allowedHosts: config.notifyAllowedHosts });
  const deliverers = createChannelDeliverers({
    guard,
    timeoutMs: config.notifyTimeoutMs,
    smtpUrl: config.smtpUrl,
    smtpFrom: config.smtpFrom,
  });
  let queueConnection: Redis | undefined;
  let queue: NotificationQueue | undefined;
  const openQueue = () => {
    queueConnection ??= deps.connections.blocking('vigil-cli-notify');
    return (queue ??= openNotificationQueue(queueConnection, keys, retryPolicyOf(config)));
  };
  const channels = createChannelAdmin({
    ctx,
    keys,
    box,
    guard,
    secretGraceMs: config.notifySecretGraceSeconds * 1000,
  });
  const routes = createRouteAdmin({ ctx, keys, minRemindEveryMs: config.notifyMinRemindEveryMs });
  return {
    ...audited(channels, routes, audit, deps.actor ?? cliActor(), ctx.nowUTC),
    /** The newest `limit` audit entries of the environment, newest first. */
    async listAudit(env: string, limit: number) {
      await ctx.requireEnv(env);
      return (await audit.list(env, { limit })).entries;
    },
    ...createNotifyAdmin({
      redis: ctx.redis,
      keys,
      box,
      queue: openQueue,
      deliver: deliverTo(deliverers),
      deliveryLog: createDeliveryLog({ redis: ctx.redis, keys, size: config.notifyLogSize }),
    }),
    /** Closes the queue and the delivery connections; the queue's Redis connection is the factory's. */
    async close() {
      deliverers.close();
      await queue?.close();
    },
  };
}

export type AlertingAdmin = ReturnType<typeof createAlertingAdmin>;

/** The channel and route administration, each change recorded in the audit log once made. */
function audited(
  channels: ChannelAdmin,
  routes: RouteAdmin,
  audit: AuditLog,
  actor: string,
  nowUTC: () => string,
) {
  const record = (env: string, action: AuditAction, target: string, details: Record<string, unknown> = {}) =>
    audit.record(env, { atUTC: nowUTC(), actor, action, target, details });
  return {
    ...channels,
    ...routes,
    async createChannel(env: string, input: Parameters<ChannelAdmin['createChannel']>[1]) {
      const created = await channels.createChannel(env, input);
      await record(env, 'channel.create', created.name, { type: created.type });
      return created;
    },
    async putChannel(env: string, input: Parameters<ChannelAdmin['putChannel']>[1]) {
      const put = await channels.putChannel(env, input);
      if (put.changed) await record(env, 'channel.provision', input.name, { type: input.type });
      return put;
    },
    async deleteChannel(env: string, name: string) {
      const deleted = await channels.deleteChannel(env, name);
      await record(env, 'channel.delete', name);
      return deleted;
    },
    async rotateSecret(env: string, name: string) {
      const rotated = await channels.rotateSecret(env, name);
      await record(env, 'channel.rotate-secret', name, {
        previousValidUntilUTC: rotated.previousValidUntilUTC,
      });
      return rotated;
    },
    async createRoute(env: string, input: Parameters<RouteAdmin['createRoute']>[1]) {
      const created = await routes.createRoute(env, input);
      await record(env, 'route.create', created.name, { channels: created.channels, filter: created.filter });
      return created;
    },
    async putRoute(env: string, input: Parameters<RouteAdmin['putRoute']>[1]) {
      const changed = await routes.putRoute(env, input);
      if (changed) await record(env, 'route.provision', String(input.name));
      return changed;
    },
    async deleteRoute(env: string, name: string) {
      const deleted = await routes.deleteRoute(env, name);
      await record(env, 'route.delete', name);
      return deleted;
    },
  };
}
