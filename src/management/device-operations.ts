/**
 * Managing an environment's devices: create, read one, update (with its revision), delete, import
 * and export as CSV. What deleting removes is the CLI's (tenancy/admin-devices.ts): the device with
 * its current state, alarms, events in the listings, overrides, suppressions and availability
 * deadline; its history stays in InfluxDB until its retention.
 */
import { z } from 'zod';
import { attr, strictAttributes } from '../api/attributes.ts';
import { objectOf, str, bool } from '../api/json-schema.ts';
import type { Redis } from '../redis/connect.ts';
import { readLastContacts } from '../state/read-state.ts';
import type { StateKeys } from '../state/state-keys.ts';
import type { DeviceAdmin } from '../tenancy/admin-devices.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import { auditedDevice, managedDevice, MANAGED_DEVICE_SCHEMA } from './device-shape.ts';
import { changed, operation, unchanged, type Operation } from './operation.ts';

export interface DeviceOperationDeps {
  redis: Redis;
  keys: TenancyKeys & StateKeys;
  devices: Pick<DeviceAdmin, 'createDevice' | 'updateDevice' | 'deleteDevice' | 'requireDevice'>;
}

/** Labels as attributes: an object of strings by key (checked further by the domain's rules). */
export const labelsAttribute = () =>
  z.record(z.string(), z.string({ error: 'an object of text values' }), {
    error: 'an object of text values',
  });

const availabilityMinutes = () =>
  attr.number({ min: 0.001 }).describe('Silence, in minutes, before an Availability event.');

export function deviceOperations(deps: DeviceOperationDeps): Operation[] {
  const { redis, keys, devices } = deps;

  async function shaped(env: string, d: DeviceRecord) {
    const [contact] = await readLastContacts(redis, keys, env, [d.deviceName]);
    return managedDevice(d, contact ?? null);
  }

  return [
    operation({
      path: '/devices/create',
      scope: 'admin',
      attributes: strictAttributes({
        deviceName: attr.string(),
        displayName: attr.string().optional(),
        definitionName: attr.string(),
        definitionIsPublic: attr.boolean(),
        labels: labelsAttribute().optional(),
        availabilityMinutes: availabilityMinutes().optional(),
      }),
      answer: { summary: 'Create a device', data: MANAGED_DEVICE_SCHEMA, errors: ['404', '409'] },
      async run(caller, a) {
        const created = await devices.createDevice(caller.env, {
          name: a.deviceName,
          definitionName: a.definitionName,
          definitionIsPublic: a.definitionIsPublic,
          ...(a.displayName === undefined ? {} : { displayName: a.displayName }),
          ...(a.labels === undefined ? {} : { labels: a.labels }),
          ...(a.availabilityMinutes === undefined ? {} : { availabilityMinutes: a.availabilityMinutes }),
        });
        return changed(await shaped(caller.env, created), {
          action: 'device.create',
          target: created.deviceName,
          after: auditedDevice(created),
        });
      },
    }),
    operation({
      path: '/devices/get',
      scope: 'read',
      attributes: strictAttributes({ deviceName: attr.string() }),
      answer: {
        summary: 'One device with its labels and revision',
        data: MANAGED_DEVICE_SCHEMA,
        errors: ['404'],
      },
      async run(caller, a) {
        return unchanged(await shaped(caller.env, await devices.requireDevice(caller.env, a.deviceName)));
      },
    }),
    operation({
      path: '/devices/update',
      scope: 'admin',
      attributes: strictAttributes({
        deviceName: attr.string(),
        displayName: attr.string().optional(),
        definitionName: attr.string().optional(),
        definitionIsPublic: attr.boolean().optional(),
        labels: labelsAttribute().optional().describe('The whole label set: it replaces the device’s.'),
        availabilityMinutes: availabilityMinutes()
          .nullable()
          .optional()
          .describe('null: inherit the definition’s timeout again.'),
        revision: attr
          .number({ integer: true, min: 1 })
          .optional()
          .describe(
            'The revision the change is based on; 409 CONFLICT when the device has another. Absent: last writer wins.',
          ),
      }),
      answer: { summary: 'Change a device', data: MANAGED_DEVICE_SCHEMA, errors: ['404', '409'] },
      async run(caller, { deviceName, ...changes }) {
        const before = await devices.requireDevice(caller.env, deviceName);
        const after = await devices.updateDevice(caller.env, deviceName, definedOnly(changes));
        return changed(await shaped(caller.env, after), {
          action: 'device.update',
          target: deviceName,
          before: auditedDevice(before),
          after: auditedDevice(after),
        });
      },
    }),
    operation({
      path: '/devices/delete',
      scope: 'admin',
      attributes: strictAttributes({ deviceName: attr.string() }),
      answer: {
        summary:
          'Delete a device with its state, alarms, events and overrides (its history stays in InfluxDB)',
        data: objectOf({ deviceName: str, deleted: bool }),
        errors: ['404'],
      },
      async run(caller, { deviceName }) {
        const deleted = await devices.deleteDevice(caller.env, deviceName);
        return changed(
          { deviceName, deleted: true },
          { action: 'device.delete', target: deviceName, before: auditedDevice(deleted) },
        );
      },
    }),
  ];
}

/** The changes that are set: an attribute left out is not a change. */
function definedOnly<T extends Record<string, unknown>>(changes: T): Partial<T> {
  return Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) as Partial<T>;
}
