/**
 * The administration of alerting as the `vigil` command and provisioning use it: channels,
 * routes, failed notifications, the delivery log and channel tests, built from the configuration.
 * `close()` releases what it opened (the BullMQ queue, delivery connections).
 */
import type { Config } from '../config/schema.ts';
import type { EventKeys } from '../events/event-keys.ts';
import { connectRedis, closeRedis, type Redis } from '../redis/connect.ts';
import { createAdminContext, type AdminDeps } from '../tenancy/admin-support.ts';
import { createAddressGuard } from './address-guard.ts';
import type { AlertingKeys } from './alerting-keys.ts';
import { createChannelAdmin } from './channel-admin.ts';
import { deliverTo } from './deliverer.ts';
import { createChannelDeliverers } from './delivery/create-deliverers.ts';
import { createDeliveryLog } from './delivery-log.ts';
import { openNotificationQueue, retryPolicyOf, type NotificationQueue } from './notification-queue.ts';
import { createNotifyAdmin } from './notify-admin.ts';
import { createRouteAdmin } from './route-admin.ts';
import { createSecretBox } from './secret-box.ts';

export function createAlertingAdmin(deps: {
  admin: AdminDeps;
  keys: AlertingKeys & EventKeys;
  config: Config;
}) {
  const { config, keys } = deps;
  const ctx = createAdminContext(deps.admin);
  const box = createSecretBox(config.secretsKey);
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
    queueConnection ??= connectRedis(config.redisUrl, 'blocking', 'vigil-cli-notify');
    return (queue ??= openNotificationQueue(queueConnection, keys, retryPolicyOf(config)));
  };
  return {
    ...createChannelAdmin({ ctx, keys, box, guard, secretGraceMs: config.notifySecretGraceSeconds * 1000 }),
    ...createRouteAdmin({ ctx, keys }),
    ...createNotifyAdmin({
      redis: ctx.redis,
      keys,
      box,
      queue: openQueue,
      deliver: deliverTo(deliverers),
      deliveryLog: createDeliveryLog({ redis: ctx.redis, keys, size: config.notifyLogSize }),
    }),
    async close() {
      deliverers.close();
      await queue?.close();
      if (queueConnection) await closeRedis(queueConnection);
    },
  };
}

export type AlertingAdmin = ReturnType<typeof createAlertingAdmin>;
