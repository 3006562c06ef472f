/**
 * The open alarms of the caller's environment, most severe first, then oldest; and acknowledging
 * one, which needs a token with scope `write` (POST only: it changes something). The alarm logic is
 * alerting's (src/alerting/alarms.ts).
 */
import { ALARMS_DEFAULT_LIMIT, ALARMS_MAX_LIMIT, createAlarms, NOTE_MAX_LENGTH } from '../alerting/alarms.ts';
import { tokenActor } from '../audit/audit-log.ts';
import { apiRoute, type ApiDeps, type ApiRoute } from './api-route.ts';
import { attr, attributes } from './attributes.ts';

export function alarmRoutes(deps: ApiDeps): ApiRoute[] {
  const alarms = createAlarms({
    redis: deps.redis,
    keys: deps.keys,
    tenancy: deps.tenancy,
    auditRetentionMs: deps.config.auditRetentionDays * 86_400_000,
  });
  return [
    apiRoute({
      paths: ['/alarms/list'],
      methods: ['GET', 'POST'],
      auth: true,
      scope: 'read',
      attributes: attributes({
        limit: attr.number({ integer: true, min: 1, max: ALARMS_MAX_LIMIT }).optional().meta({
          description: 'Most alarms returned (the most severe, then oldest).',
          default: ALARMS_DEFAULT_LIMIT,
        }),
      }),
      handle: ({ env, attrs }) => alarms.list(env, attrs.limit),
    }),
    apiRoute({
      paths: ['/alarms/acknowledge'],
      methods: ['POST'],
      auth: true,
      scope: 'write',
      attributes: attributes({
        deviceName: attr.string(),
        sensorName: attr
          .string()
          .optional()
          .describe("The data point whose alarm is acknowledged; absent: the device's Availability alarm."),
        note: attr
          .string()
          .max(NOTE_MAX_LENGTH, { error: `a string of at most ${NOTE_MAX_LENGTH} characters` })
          .optional()
          .describe('Shown with the alarm and in the audit log.'),
      }),
      handle: ({ env, token, attrs, nowMs }) =>
        alarms.acknowledge({
          env,
          deviceName: attrs.deviceName,
          sensorName: attrs.sensorName,
          note: attrs.note,
          // Routes with a scope always have a token.
          actor: token ? tokenActor(token) : '',
          nowMs,
        }),
    }),
  ];
}
