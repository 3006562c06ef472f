/**
 * Alerting in tests: settings with short timers and a fixed secrets key, the administration
 * (channels, routes, failed notifications) on a pipeline's Redis, and events put into the outbox
 * exactly as the state step writes them (for the notifier's own tests; end-to-end tests create
 * them through the gateway).
 */
import { randomBytes } from 'node:crypto';
import { onTestFinished } from 'vitest';
import { createAlertingAdmin, type AlertingAdmin } from '../../src/alerting/alerting-admin.ts';
import { NOTIFICATION_QUEUE, NOTIFIER_GROUP } from '../../src/alerting/notification.ts';
import type { Config } from '../../src/config/schema.ts';
import type { EventRecord } from '../../src/domain/types.ts';
import { adminDeps } from '../../src/keys.ts';
import { type Pipeline } from './pipeline.ts';
import { RECEIVER_ALLOW_LIST, startHttpReceiver, type HttpReceiver } from './receivers.ts';
import { eventually } from './eventually.ts';

/** A fixed key for tests (the base64 of 32 bytes). */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

/**
 * Short timers: retries 200 ms apart, claims lapsing after 1 s, a 1 s request timeout; the ports of
 * this file's HTTP receivers allowed.
 */
export const ALERTING_TEST_CONFIG = {
  secretsKey: TEST_SECRETS_KEY,
  notifyAllowedHosts: RECEIVER_ALLOW_LIST,
  notifyRetrySchedule: '200ms,200ms,200ms,200ms,200ms,200ms,200ms',
  notifyTimeoutMs: 1000,
  notifyStalledIntervalMs: 1000,
  notifyReclaimIdleMs: 500,
} satisfies Partial<Record<keyof Config, string | number | boolean>>;

export function alertingAdmin(p: Pipeline, config: Config = p.config): AlertingAdmin {
  const admin = createAlertingAdmin({
    admin: adminDeps(p.redis, p.keys),
    keys: p.keys,
    config,
    connections: p.connections,
  });
  onTestFinished(() => admin.close());
  return admin;
}

/**
 * A receiver on loopback and a webhook channel `hook` of `env` posting to it (at `path`, with
 * `headers`), the receiver checking every signature with the channel's signing secret.
 */
export async function verifyingWebhook(
  admin: AlertingAdmin,
  env: string,
  opts: { path?: string; headers?: [string, string][] } = {},
): Promise<HttpReceiver> {
  const receiver = await startHttpReceiver();
  const { secret } = await admin.createChannel(env, {
    name: 'hook',
    type: 'webhook',
    url: `${receiver.url}${opts.path ?? ''}`,
    ...(opts.headers ? { headers: opts.headers } : {}),
  });
  receiver.secrets = [secret ?? ''];
  return receiver;
}

let sequence = 0;

/** An event as the state step makes it (a WARNING of Temperature unless `fields` say otherwise). */
export function makeEvent(env: string, fields: Partial<EventRecord> = {}): EventRecord {
  const device = fields.deviceName ?? 'device_1';
  return {
    id: `ev-${randomBytes(6).toString('hex')}-${sequence++}`,
    env,
    deviceName: device,
    displayName: `Display ${device}`,
    sensorName: 'Temperature',
    sensorType: 'tempC',
    sensorValue: 26.1,
    eventStatus: 'WARNING',
    eventCategory: 'Sensors',
    eventMessage: 'Temperature - Above 25 °C - WARNING - 26.1 °C',
    receivedMs: Date.now(),
    ...fields,
  };
}

/** Writes events to their environment's list and the outbox, as the state step does. */
export async function emitEvents(p: Pipeline, events: EventRecord[]): Promise<void> {
  const m = p.redis.multi();
  for (const e of events) {
    const json = JSON.stringify(e);
    m.zadd(p.keys.envEvents(e.env), e.receivedMs, json);
    m.xadd(p.keys.eventOutbox(), '*', 'e', json);
  }
  await m.exec();
}

/**
 * True (else undefined, for eventually()) once the notifier has routed every event of the outbox:
 * its group has read them all and acknowledged each batch after its notifications were queued.
 */
export async function eventsRouted(p: Pipeline): Promise<true | undefined> {
  const groups = (await p.redis.xinfo('GROUPS', p.keys.eventOutbox())) as unknown[][];
  const notifier = groups.map((row) => new Map(chunks(row))).find((g) => g.get('name') === NOTIFIER_GROUP);
  return notifier && Number(notifier.get('pending')) === 0 && Number(notifier.get('lag')) === 0
    ? true
    : undefined;
}

/**
 * True (else undefined, for eventually()) once the notifier has routed every event of the outbox
 * and no notification is waiting, delayed or in delivery.
 */
export async function notificationsSettled(p: Pipeline): Promise<true | undefined> {
  if (!(await eventsRouted(p))) return undefined;
  const q = `${p.keys.bullPrefix()}:${NOTIFICATION_QUEUE}`;
  const [wait, active, delayed, prioritized] = await Promise.all([
    p.redis.llen(`${q}:wait`),
    p.redis.llen(`${q}:active`),
    p.redis.zcard(`${q}:delayed`),
    p.redis.zcard(`${q}:prioritized`),
  ]);
  return wait + active + delayed + prioritized === 0 ? true : undefined;
}

function chunks(row: unknown[]): [unknown, unknown][] {
  const out: [unknown, unknown][] = [];
  for (let i = 0; i + 1 < row.length; i += 2) out.push([row[i], row[i + 1]]);
  return out;
}

/** Polls a synchronous condition (what a receiver recorded) until it holds, or fails after `timeoutMs`. */
export function until(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<true> {
  return eventually(() => condition() || undefined, { timeoutMs, message: what });
}
