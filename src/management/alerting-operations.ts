/**
 * Managing an environment's alerting: channels (signed webhooks, Slack, email), routes, and the
 * notifications that failed. The rules are alerting's own (src/alerting/channel-admin.ts,
 * route-admin.ts, notify-admin.ts: secrets sealed, the SSRF guard, a channel in use kept); an
 * operation maps its attributes to them, answers what `vigil channel|route|notify` prints, and
 * reports the change. Secrets never reach an answer or the audit log, but a webhook's signing
 * secret, shown once when it is made (`/channels/create`, `/channels/rotateSecret`).
 *
 * The administration is opened on the first operation that needs it (it brings BullMQ, the
 * delivery adapters and, for failed notifications, a queue connection): `alerting()`.
 */
import { z } from 'zod';
import { attr, strictAttributes } from '../api/attributes.ts';
import { arrayOf, bool, int, objectOf, str, ts } from '../api/json-schema.ts';
import type { AlertingAdmin } from '../alerting/alerting-admin.ts';
import { viewChannel, type ChannelView } from '../alerting/channel-admin.ts';
import { CHANNEL_TYPES, type ChannelInput } from '../alerting/channel-spec.ts';
import type { RouteInput } from '../alerting/route-spec.ts';
import { AppError } from '../errors/app-error.ts';
import { LABELS_SCHEMA } from './device-shape.ts';
import { labelsAttribute } from './device-operations.ts';
import { changed, operation, unchanged, type Caller, type Change, type Operation } from './operation.ts';

/** What the operations use of alerting's administration. */
export type AlertingOperationsAdmin = Pick<
  AlertingAdmin,
  | 'createChannel'
  | 'listChannels'
  | 'getChannel'
  | 'deleteChannel'
  | 'rotateSecret'
  | 'testChannel'
  | 'createRoute'
  | 'listRoutes'
  | 'getRoute'
  | 'deleteRoute'
  | 'listFailed'
  | 'retryFailed'
  | 'listAttempts'
>;

export interface AlertingOperationDeps {
  /** The administration, opened on first use. */
  alerting: () => Promise<AlertingOperationsAdmin>;
  /** ENVIRONMENT_NOT_FOUND unless the environment exists (the CLI may name any). */
  requireEnv: (env: string) => Promise<void>;
}

/** Delivery attempts `/notifications/log` answers without `limit`, and at most. */
export const NOTIFY_LOG_DEFAULT_LIMIT = 50;
export const NOTIFY_LOG_MAX_LIMIT = 10_000;
/** Most ids one `/notifications/retry` names. */
export const RETRY_MAX_IDS = 1000;
/** Most recipients of an email channel (channel-spec.ts refuses more too). */
const MAX_RECIPIENTS = 50;

const nullableStr = { type: ['string', 'null'] };
const nullableInt = { type: ['integer', 'null'] };

const CHANNEL_SCHEMA = {
  type: 'object',
  required: ['name', 'type', 'createdUTC', 'target'],
  properties: {
    name: str,
    type: { enum: [...CHANNEL_TYPES] },
    createdUTC: str,
    target: {
      ...str,
      description:
        'webhook: the URL, its user, password and query values masked; slack: that the URL is encrypted; email: the recipients.',
    },
    headers: { ...arrayOf(str), description: 'webhook: `Name: ********` per header.' },
    secret: { ...str, description: 'webhook: `whsec_********` (the secret is shown only when it is made).' },
    to: arrayOf(str),
  },
};

const CREATED_CHANNEL_SCHEMA = {
  type: 'object',
  required: ['name', 'type'],
  properties: {
    name: str,
    type: { enum: [...CHANNEL_TYPES] },
    secret: { ...str, description: 'webhook: the signing secret, `whsec_…`, shown only this once.' },
  },
};

const ROUTE_SCHEMA = objectOf({
  name: str,
  channels: arrayOf(str),
  filter: { ...str, description: 'The filter in words: `Sensors, WARNING and above, device hall-*, …`.' },
  labels: { ...LABELS_SCHEMA, description: 'Labels the device must have ({} when none).' },
  remindEvery: { ...nullableInt, description: 'Reminder interval, ms; null when the route does not remind.' },
  quietHours: { ...nullableStr, description: '`22:00-07:00 Europe/Amsterdam`, or null.' },
  createdUTC: str,
});

const FAILED_SCHEMA = objectOf({
  id: str,
  kind: { enum: ['event', 'reminder', 'digest', 'test'] },
  channel: str,
  deviceName: nullableStr,
  sensorName: nullableStr,
  createdUTC: str,
  failedUTC: ts,
  attempts: int,
  lastAnswer: { ...str, description: 'The receiver’s last answer, or the failure.' },
});

const ATTEMPT_SCHEMA = objectOf({
  timeUTC: str,
  notificationId: str,
  channel: str,
  channelType: { type: ['string', 'null'], enum: [...CHANNEL_TYPES, null] },
  kind: { enum: ['event', 'reminder', 'digest', 'test'] },
  deviceName: nullableStr,
  sensorName: nullableStr,
  attempt: int,
  outcome: { enum: ['delivered', 'retrying', 'failed', 'discarded'] },
  status: { ...nullableInt, description: 'HTTP status or SMTP reply code.' },
  answer: str,
  ms: int,
});

const TEST_SCHEMA = objectOf({
  channel: str,
  ok: { ...bool, description: 'Whether the receiver accepted it (2xx, SMTP 2xx).' },
  status: { ...nullableInt, description: 'HTTP status or SMTP reply code; null when there was no answer.' },
  answer: { ...str, description: 'The receiver’s answer in one line: `HTTP 200 ok`, or what went wrong.' },
  body: { ...nullableStr, description: 'The start of the answer’s body (HTTP).' },
  notificationId: { ...str, description: 'Its webhook-id, `test_…`.' },
  ms: int,
});

const deleted = objectOf({ name: str, deleted: bool });

const channelName = () => attr.string().describe('The channel.');
const routeName = () => attr.string().describe('The route.');

/** An attribute that the channel's type has no use for. */
function notFor(type: string, attribute: string): AppError {
  return new AppError('INVALID_ATTRIBUTE', `There is no attribute ${attribute} for a ${type} channel.`, {
    details: { attribute },
  });
}

function missing(attribute: string): AppError {
  return new AppError('MISSING_ATTRIBUTE', `The attribute ${attribute} is required.`, {
    details: { attribute },
  });
}

interface ChannelAttributes {
  name: string;
  type: (typeof CHANNEL_TYPES)[number];
  url?: string | undefined;
  headers?: Record<string, string> | undefined;
  to?: string[] | undefined;
}

/** The channel as alerting's input: each type with its fields, the others refused by name. */
function channelInput(a: ChannelAttributes): ChannelInput {
  const allow = (...fields: ('url' | 'headers' | 'to')[]) => {
    for (const f of ['url', 'headers', 'to'] as const)
      if (a[f] !== undefined && !fields.includes(f)) throw notFor(a.type, f);
  };
  const need = <T>(value: T | undefined, attribute: string): T => {
    if (value === undefined) throw missing(attribute);
    return value;
  };
  switch (a.type) {
    case 'webhook':
      allow('url', 'headers');
      return {
        name: a.name,
        type: 'webhook',
        url: need(a.url, 'url'),
        headers: Object.entries(a.headers ?? {}),
      };
    case 'slack':
      allow('url');
      return { name: a.name, type: 'slack', url: need(a.url, 'url') };
    case 'email':
      allow('to');
      return { name: a.name, type: 'email', to: need(a.to, 'to') };
  }
}

/** A route's attributes as alerting's input: what is given, nothing else. */
function routeInput(a: Record<string, unknown>): RouteInput {
  return Object.fromEntries(Object.entries(a).filter(([, v]) => v !== undefined)) as RouteInput;
}

export function alertingOperations(deps: AlertingOperationDeps): Operation[] {
  /** The administration, once the caller's environment is known to exist. */
  async function admin(caller: Caller): Promise<AlertingOperationsAdmin> {
    await deps.requireEnv(caller.env);
    return deps.alerting();
  }
  const view = async (alerting: AlertingOperationsAdmin, env: string, name: string): Promise<ChannelView> =>
    viewChannel(await alerting.getChannel(env, name));

  return [
    operation({
      path: '/channels/create',
      scope: 'admin',
      attributes: strictAttributes({
        name: attr.string().describe('Letters, digits, `_ . -`, at most 64.'),
        type: attr.oneOf(CHANNEL_TYPES),
        url: attr.string().optional().describe('webhook: the receiver; slack: the incoming-webhook URL.'),
        headers: z
          .record(z.string(), z.string({ error: 'an object of text values' }), {
            error: 'an object of text values',
          })
          .optional()
          .describe('webhook: extra headers, name → value (stored encrypted).'),
        to: attr.list(attr.string(), { max: MAX_RECIPIENTS }).optional().describe('email: the recipients.'),
      }),
      answer: {
        summary: 'Create a channel; a webhook’s signing secret is answered this once',
        data: CREATED_CHANNEL_SCHEMA,
        errors: ['404', '409'],
      },
      async run(caller, a) {
        const input = channelInput(a);
        const alerting = await admin(caller);
        const created = await alerting.createChannel(caller.env, input);
        return changed(created, {
          action: 'channel.create',
          target: created.name,
          after: await view(alerting, caller.env, created.name),
        });
      },
    }),
    operation({
      path: '/channels/list',
      scope: 'admin',
      attributes: strictAttributes({}),
      answer: { summary: 'The channels, by name, secrets masked', data: arrayOf(CHANNEL_SCHEMA), errors: [] },
      async run(caller) {
        return unchanged(await (await admin(caller)).listChannels(caller.env));
      },
    }),
    operation({
      path: '/channels/delete',
      scope: 'admin',
      attributes: strictAttributes({ name: channelName() }),
      answer: {
        summary: 'Delete a channel (409 IN_USE while a route sends to it)',
        data: deleted,
        errors: ['404', '409'],
      },
      async run(caller, { name }) {
        const alerting = await admin(caller);
        const before = await view(alerting, caller.env, name);
        await alerting.deleteChannel(caller.env, name);
        return changed({ name, deleted: true }, { action: 'channel.delete', target: name, before });
      },
    }),
    operation({
      path: '/channels/rotateSecret',
      scope: 'admin',
      attributes: strictAttributes({ name: channelName() }),
      answer: {
        summary:
          'A new signing secret for a webhook channel, answered this once; the old one signs too until previousValidUntilUTC',
        data: objectOf({
          name: str,
          type: str,
          secret: { ...str, description: 'The new signing secret, `whsec_…`, shown only this once.' },
          previousValidUntilUTC: str,
        }),
        errors: ['404'],
      },
      async run(caller, { name }) {
        const rotated = await (await admin(caller)).rotateSecret(caller.env, name);
        return changed(rotated, {
          action: 'channel.rotate-secret',
          target: name,
          details: { previousValidUntilUTC: rotated.previousValidUntilUTC },
        });
      },
    }),
    operation({
      path: '/channels/test',
      scope: 'admin',
      attributes: strictAttributes({ name: channelName() }),
      answer: {
        summary:
          'Send a test notification now, through the real delivery path, and answer the receiver’s answer',
        data: TEST_SCHEMA,
        errors: ['404'],
      },
      async run(caller, { name }) {
        const r = await (await admin(caller)).testChannel(caller.env, name);
        const data = {
          channel: name,
          ok: r.ok,
          status: r.status ?? null,
          answer: r.answer,
          body: r.body ?? null,
          notificationId: r.notificationId,
          ms: r.ms,
        };
        return changed(data, {
          action: 'channel.test',
          target: name,
          details: { ok: r.ok, status: data.status, notificationId: r.notificationId },
        });
      },
    }),
    operation({
      path: '/routes/create',
      scope: 'admin',
      attributes: strictAttributes({
        name: attr.string().describe('Letters, digits, `_ . -`, at most 64.'),
        channels: attr.list(attr.string(), { max: 20 }).describe('The channels it sends to.'),
        category: attr.oneOf(['Sensors', 'Availability']).optional(),
        minStatus: attr
          .oneOf(['INFO', 'WARNING', 'ERROR', 'CRITICAL'])
          .optional()
          .describe('The least status sent.'),
        device: attr.string().optional().describe('Device names: `*` any characters, `?` one.'),
        sensor: attr.string().optional().describe('One data point (`availability` for Availability events).'),
        labels: labelsAttribute()
          .optional()
          .describe('Labels the device must have, each with this value: {"site": "amsterdam"}.'),
        includeSuccess: attr.boolean().optional().describe('Also send returns to SUCCESS.'),
        remindEvery: attr
          .string()
          .optional()
          .describe('Remind of an unacknowledged alarm this often: `1h`, `30m`.'),
        quietHours: attr
          .string()
          .optional()
          .describe('Hold notifications in this local span: `22:00-07:00`.'),
        timeZone: attr.string().optional().describe('IANA time zone of the quiet hours (UTC).'),
      }),
      answer: { summary: 'Create a route', data: ROUTE_SCHEMA, errors: ['404', '409'] },
      async run(caller, a) {
        const created = await (await admin(caller)).createRoute(caller.env, routeInput(a));
        return changed(created, { action: 'route.create', target: created.name, after: created });
      },
    }),
    operation({
      path: '/routes/list',
      scope: 'admin',
      attributes: strictAttributes({}),
      answer: { summary: 'The routes, by name', data: arrayOf(ROUTE_SCHEMA), errors: [] },
      async run(caller) {
        return unchanged(await (await admin(caller)).listRoutes(caller.env));
      },
    }),
    operation({
      path: '/routes/delete',
      scope: 'admin',
      attributes: strictAttributes({ name: routeName() }),
      answer: { summary: 'Delete a route', data: deleted, errors: ['404'] },
      async run(caller, { name }) {
        const alerting = await admin(caller);
        const before = await alerting.getRoute(caller.env, name);
        await alerting.deleteRoute(caller.env, name);
        return changed({ name, deleted: true }, { action: 'route.delete', target: name, before });
      },
    }),
    operation({
      path: '/notifications/failed',
      scope: 'admin',
      attributes: strictAttributes({}),
      answer: {
        summary: 'Failed notifications, newest first, with the receiver’s last answer',
        data: arrayOf(FAILED_SCHEMA),
        errors: [],
      },
      async run(caller) {
        return unchanged(await (await admin(caller)).listFailed(caller.env));
      },
    }),
    operation({
      path: '/notifications/retry',
      scope: 'admin',
      attributes: strictAttributes({
        ids: attr
          .list(attr.string(), { max: RETRY_MAX_IDS })
          .optional()
          .describe('Failed notifications to send again; absent or empty: every one of the environment.'),
      }),
      answer: {
        summary: 'Send failed notifications again, with a fresh retry schedule',
        data: objectOf({ retried: { ...arrayOf(str), description: 'The ids sent again.' } }),
        errors: ['404'],
      },
      async run(caller, { ids }) {
        const alerting = await admin(caller);
        const failed = new Map((await alerting.listFailed(caller.env)).map((f) => [f.id, f]));
        const retried = await alerting.retryFailed(caller.env, ids ?? []);
        const changes = retried.map((id): Change => ({
          action: 'notification.retry',
          target: id,
          details: { channel: failed.get(id)?.channel ?? null, kind: failed.get(id)?.kind ?? null },
        }));
        return { data: { retried }, changes };
      },
    }),
    operation({
      path: '/notifications/log',
      scope: 'admin',
      attributes: strictAttributes({
        limit: attr
          .number({ integer: true, min: 1, max: NOTIFY_LOG_MAX_LIMIT })
          .optional()
          .describe(`Most attempts answered (${NOTIFY_LOG_DEFAULT_LIMIT}).`),
      }),
      answer: {
        summary: 'Delivery attempts, newest first: channel, kind, attempt, outcome, the receiver’s answer',
        data: arrayOf(ATTEMPT_SCHEMA),
        errors: [],
      },
      async run(caller, { limit }) {
        return unchanged(
          await (await admin(caller)).listAttempts(caller.env, limit ?? NOTIFY_LOG_DEFAULT_LIMIT),
        );
      },
    }),
  ];
}
