/**
 * The administration of alerting as the management operations (src/management/
 * alerting-operations.ts), the `vigil` command and provisioning use it: channels, routes, failed
 * notifications, the delivery log, channel tests and the audit log's listing, built from the
 * configuration. It records nothing in the audit log itself: the management operations record
 * their changes, and provisioning its own (alerting-provisioning.ts). `close()` releases what it
 * opened (the BullMQ queue, delivery connections).
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
import { createAuditLog } from '../audit/audit-log.ts';
import { createChannelAdmin } from './channel-admin.ts';
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
import { createRouteAdmin } from './route-admin.ts';
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
    ...channels,
    ...routes,
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
