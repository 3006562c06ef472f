/**
 * A device's rules: its threshold overrides (with their revisions) and suppressed data points. Each
 * data point's rules come from the device's definition unless the device overrides them; an
 * override replaces the whole set (rules, hysteresis, stale rule) and is validated against the data
 * point's type by the domain (tenancy/admin-devices.ts). A suppressed data point keeps its status
 * but creates no events, until a time or until unsuppressed. Workers see a change at their next
 * step (the catalog epochs, docs/processing.md).
 */
import { z } from 'zod';
import { attr, strictAttributes } from '../api/attributes.ts';
import { arrayOf, int, objectOf, str, ts } from '../api/json-schema.ts';
import { publicRules, type PublicRules } from '../domain/thresholds.ts';
import type { DataPointSpec } from '../domain/types.ts';
import type { DeviceAdmin } from '../tenancy/admin-devices.ts';
import type { StoredOverride } from '../tenancy/records.ts';
import { changed, operation, unchanged, type Change, type Operation } from './operation.ts';

export interface ThresholdOperationDeps {
  devices: Pick<
    DeviceAdmin,
    'readDeviceRules' | 'putThreshold' | 'clearThreshold' | 'suppress' | 'unsuppress'
  >;
}

/** A device override with its revision. */
export type PublicOverride = PublicRules & { revision: number };

/** One data point of a device, as the console shows where a device's rules are. */
export interface DataPointRules {
  sensorName: string;
  displayName: string;
  dataType: DataPointSpec['dataType'];
  /** The definition's rules. */
  definition: PublicRules;
  /** The device's override; null: none. */
  override: PublicOverride | null;
  /** Which of the two the worker applies. */
  applies: 'override' | 'definition';
  /** null: not suppressed (or its suppression has ended); `untilUTC` null: until unsuppressed. */
  suppression: { untilUTC: string | null } | null;
}

export interface DeviceRulesView {
  deviceName: string;
  definitionName: string;
  definitionIsPublic: boolean;
  dataPoints: DataPointRules[];
}

export interface ThresholdSetAnswer {
  deviceName: string;
  sensorName: string;
  override: PublicOverride;
  /** False when the override was the same already (nothing written, no audit entry). */
  changed: boolean;
}

export interface ThresholdClearAnswer {
  deviceName: string;
  /** null: every override of the device. */
  sensorName: string | null;
  /** The data points whose override was removed. */
  cleared: string[];
}

export interface SuppressionAnswer {
  deviceName: string;
  sensorName: string;
  suppressed: boolean;
  /** Till when; null: until unsuppressed (or not suppressed). */
  untilUTC: string | null;
}

export const publicOverride = (o: StoredOverride): PublicOverride => ({
  ...publicRules(o.set),
  revision: o.revision,
});

const definitionRules = (dp: DataPointSpec): PublicRules =>
  publicRules({ rules: dp.thresholds, hysteresis: dp.hysteresis, ...(dp.stale ? { stale: dp.stale } : {}) });

/** A suppression as stored (until epoch ms, 0: no end) as it reads; null when it has ended. */
function suppression(untilMs: number | undefined, nowMs: number): DataPointRules['suppression'] {
  if (untilMs === undefined || (untilMs !== 0 && untilMs <= nowMs)) return null;
  return { untilUTC: untilMs === 0 ? null : new Date(untilMs).toISOString() };
}

/** A suppression as the audit log keeps it (an ended one too: it is what was stored). */
const auditedSuppression = (untilMs: number) => ({
  untilUTC: untilMs === 0 ? null : new Date(untilMs).toISOString(),
});

const target = (device: string, sensor: string) => `${device}/${sensor}`;

const RULE_SCHEMA = {
  type: 'object',
  required: ['status'],
  properties: {
    status: { enum: ['INFO', 'WARNING', 'ERROR', 'CRITICAL'] },
    above: { type: 'number' },
    below: { type: 'number' },
    equals: { type: ['string', 'number', 'boolean'] },
    description: str,
    for: { ...str, description: 'How long the condition must hold: 90s, 10m, 2h.' },
  },
};
const RULES_PROPERTIES = {
  rules: arrayOf(RULE_SCHEMA),
  hysteresis: { type: 'number' },
  stale: {
    oneOf: [{ type: 'null' }, objectOf({ after: str, status: str })],
    description: 'No value for `after` gives `status`; null: never stale.',
  },
};
const RULES_SCHEMA = objectOf(RULES_PROPERTIES);
const OVERRIDE_SCHEMA = objectOf({ ...RULES_PROPERTIES, revision: int });
const DATA_POINT_SCHEMA = objectOf({
  sensorName: str,
  displayName: str,
  dataType: str,
  definition: RULES_SCHEMA,
  override: { oneOf: [{ type: 'null' }, OVERRIDE_SCHEMA] },
  applies: { enum: ['override', 'definition'] },
  suppression: {
    oneOf: [{ type: 'null' }, objectOf({ untilUTC: ts })],
    description: 'null: not suppressed; untilUTC null: until unsuppressed.',
  },
});
const SUPPRESSION_SCHEMA = objectOf({
  deviceName: str,
  sensorName: str,
  suppressed: { type: 'boolean' },
  untilUTC: ts,
});

/** A rule list, or `{rules, hysteresis, stale}`: checked further by the domain against the data point's type. */
const rulesAttribute = () =>
  z
    .union([z.array(z.unknown()), z.record(z.string(), z.unknown())], {
      error: 'a rule list or an object {rules, hysteresis, stale}',
    })
    .describe(
      'A rule list, [{"status":"WARNING","above":28},{"status":"CRITICAL","above":30,"for":"10m"}], or {"rules":[…],"hysteresis":0.5,"stale":{"after":"30m","status":"WARNING"}}.',
    );

export function thresholdOperations(deps: ThresholdOperationDeps): Operation[] {
  const { devices } = deps;
  const sensorAttributes = { deviceName: attr.string(), sensorName: attr.string() };

  return [
    operation({
      path: '/thresholds/get',
      scope: 'read',
      attributes: strictAttributes({ deviceName: attr.string() }),
      answer: {
        summary:
          'A device’s rules: per data point the definition’s, the device’s override with its revision, which applies, and its suppression',
        data: objectOf({
          deviceName: str,
          definitionName: str,
          definitionIsPublic: { type: 'boolean' },
          dataPoints: arrayOf(DATA_POINT_SCHEMA),
        }),
        errors: ['404'],
      },
      async run(caller, { deviceName }) {
        const r = await devices.readDeviceRules(caller.env, deviceName);
        const view: DeviceRulesView = {
          deviceName,
          definitionName: r.device.definitionName,
          definitionIsPublic: r.device.definitionIsPublic,
          dataPoints: r.definition.spec.dataPoints.map((dp) => {
            const override = r.overrides.get(dp.name);
            return {
              sensorName: dp.name,
              displayName: dp.displayName,
              dataType: dp.dataType,
              definition: definitionRules(dp),
              override: override ? publicOverride(override) : null,
              applies: override ? 'override' : 'definition',
              suppression: suppression(r.suppressed.get(dp.name), caller.nowMs),
            };
          }),
        };
        return unchanged(view);
      },
    }),
    operation({
      path: '/thresholds/set',
      scope: 'admin',
      attributes: strictAttributes({
        ...sensorAttributes,
        rules: rulesAttribute(),
        revision: attr
          .number({ integer: true, min: 0 })
          .optional()
          .describe(
            'The override’s revision the change is based on (0: that the device has none); 409 CONFLICT when it has another. Absent: last writer wins.',
          ),
      }),
      answer: {
        summary: 'Override a data point’s rules, hysteresis and stale rule for one device',
        data: objectOf({
          deviceName: str,
          sensorName: str,
          override: OVERRIDE_SCHEMA,
          changed: { type: 'boolean' },
        }),
        errors: ['404', '409'],
      },
      async run(caller, { deviceName, sensorName, rules, revision }) {
        const w = await devices.putThreshold(caller.env, deviceName, sensorName, rules, revision);
        const data: ThresholdSetAnswer = {
          deviceName,
          sensorName,
          override: publicOverride(w.after),
          changed: w.changed,
        };
        if (!w.changed) return unchanged(data);
        return changed(data, {
          action: 'threshold.set',
          target: target(deviceName, sensorName),
          ...(w.before ? { before: publicOverride(w.before) } : {}),
          after: publicOverride(w.after),
        });
      },
    }),
    operation({
      path: '/thresholds/clear',
      scope: 'admin',
      attributes: strictAttributes({
        deviceName: attr.string(),
        sensorName: attr.string().optional().describe('Absent: every override of the device.'),
      }),
      answer: {
        summary:
          'Remove a device’s override of a data point (or all of them): back to the definition’s rules',
        data: objectOf({ deviceName: str, sensorName: { type: ['string', 'null'] }, cleared: arrayOf(str) }),
        errors: ['404'],
      },
      async run(caller, { deviceName, sensorName }) {
        const removed = await devices.clearThreshold(caller.env, deviceName, sensorName);
        const changes: Change[] = [...removed].map(([sensor, before]) => ({
          action: 'threshold.clear',
          target: target(deviceName, sensor),
          before: publicOverride(before),
        }));
        const data: ThresholdClearAnswer = {
          deviceName,
          sensorName: sensorName ?? null,
          cleared: [...removed.keys()],
        };
        return { data, changes };
      },
    }),
    operation({
      path: '/sensors/suppress',
      scope: 'admin',
      attributes: strictAttributes({
        ...sensorAttributes,
        untilUTC: z.iso
          .datetime({ offset: true, error: 'an ISO 8601 time such as 2026-12-01T18:00:00Z' })
          .nullable()
          .optional()
          .describe('When the suppression ends, in the future. Absent or null: until unsuppressed.'),
      }),
      answer: {
        summary:
          'Suppress a data point’s events (its status still updates), until a time or until unsuppressed',
        data: SUPPRESSION_SCHEMA,
        errors: ['404'],
      },
      async run(caller, { deviceName, sensorName, untilUTC }) {
        const untilMs = untilUTC === undefined || untilUTC === null ? 0 : Date.parse(untilUTC);
        const previous = await devices.suppress(caller.env, deviceName, sensorName, untilMs);
        const data: SuppressionAnswer = {
          deviceName,
          sensorName,
          suppressed: true,
          untilUTC: untilMs === 0 ? null : new Date(untilMs).toISOString(),
        };
        if (previous === untilMs) return unchanged(data);
        return changed(data, {
          action: 'sensor.suppress',
          target: target(deviceName, sensorName),
          ...(previous === null ? {} : { before: auditedSuppression(previous) }),
          after: auditedSuppression(untilMs),
        });
      },
    }),
    operation({
      path: '/sensors/unsuppress',
      scope: 'admin',
      attributes: strictAttributes(sensorAttributes),
      answer: {
        summary: 'End a data point’s suppression: it creates events again',
        data: SUPPRESSION_SCHEMA,
        errors: ['404'],
      },
      async run(caller, { deviceName, sensorName }) {
        const previous = await devices.unsuppress(caller.env, deviceName, sensorName);
        const data: SuppressionAnswer = { deviceName, sensorName, suppressed: false, untilUTC: null };
        if (previous === null) return unchanged(data);
        return changed(data, {
          action: 'sensor.unsuppress',
          target: target(deviceName, sensorName),
          before: auditedSuppression(previous),
        });
      },
    }),
  ];
}
