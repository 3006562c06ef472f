/**
 * Alerting set up for the bench: the settings a notifier needs to deliver to a receiver on
 * loopback, and the administration the CLI uses to create webhook channels and their routes.
 */
import { createAlertingAdmin } from '../../src/alerting/alerting-admin.ts';
import type { RouteInput } from '../../src/alerting/route-spec.ts';
import { loadConfig } from '../../src/config/load-config.ts';
import { adminDeps, createKeys, type Keys } from '../../src/keys.ts';
import type { Redis } from '../../src/redis/connect.ts';
import { createConnections } from '../../src/redis/connections.ts';
import type { BenchContext, BenchVigil } from './context.ts';
import { BENCH_ENV } from './provision.ts';
import type { Settings } from './vigil-process.ts';
import type { Receiver } from './webhook-receiver.ts';

const SECRETS_KEY = Buffer.alloc(32, 42).toString('base64');

/**
 * What a notifier needs to deliver to `receiverUrl` on loopback: a key for channel secrets, the
 * receiver's address and port allowed (VIGIL_NOTIFY_ALLOWED_HOSTS admits one port per entry).
 * Flood control as shipped (the end-to-end cost of a route is measured as deployed).
 */
export const notifierDefaultSettings = (receiverUrl: string): Settings => ({
  secretsKey: SECRETS_KEY,
  notifyAllowedHosts: new URL(receiverUrl).host,
});

/**
 * The same with flood control raised out of the way, so that every notification is delivered on
 * its own (a digest per minute would measure the flood window, not delivery).
 */
export const notifierSettings = (receiverUrl: string): Settings => ({
  ...notifierDefaultSettings(receiverUrl),
  notifyDigestThreshold: 1_000_000_000,
});

export interface BenchAlerting {
  redis: Redis;
  keys: Keys;
  /** A webhook channel `name` to `receiver` (path `/<name>`) and a route `name` to it with `filter`. */
  addWebhook(receiver: Receiver, name: string, filter: Omit<RouteInput, 'name' | 'channels'>): Promise<void>;
  close(): Promise<void>;
}

/** The alerting administration of a bench Vigil's environment. */
export function openAlerting(ctx: BenchContext, bv: BenchVigil): BenchAlerting {
  const config = loadConfig({}, { ...bv.settings, roles: 'api' });
  const keys = createKeys(bv.settings.keyPrefix);
  const connections = createConnections({ redisUrl: ctx.redisUrl });
  const redis = connections.command('bench-alerting');
  const admin = createAlertingAdmin({ admin: adminDeps(redis, keys), keys, config, connections });
  return {
    redis,
    keys,
    async addWebhook(receiver, name, filter) {
      const path = `/${name}`;
      const { secret } = await admin.createChannel(BENCH_ENV, {
        name,
        type: 'webhook',
        url: receiver.url + path,
      });
      receiver.secrets.set(path, secret ?? '');
      await admin.createRoute(BENCH_ENV, { ...filter, name, channels: [name] });
    },
    async close() {
      await admin.close();
      await connections.close();
    },
  };
}
