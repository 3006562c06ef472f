/**
 * A device as the management API answers it: the read API's Device (deviceName, displayName,
 * definitionIsPublic, definitionName, lastContactUTC, labels) with what managing it needs — its
 * availability override, revision and creation time.
 */
import { arrayOf, bool, int, objectOf, str, ts } from '../api/json-schema.ts';
import { deviceShape, type DeviceShape } from '../api/sensor-shapes.ts';
import type { DeviceRecord } from '../tenancy/types.ts';

export interface ManagedDevice extends DeviceShape {
  /** null: the definition's timeout (or the default). */
  availabilityMinutes: number | null;
  revision: number;
  createdUTC: string;
}

export function managedDevice(d: DeviceRecord, lastContactMs: number | null): ManagedDevice {
  return {
    ...deviceShape(d, lastContactMs),
    availabilityMinutes: d.availabilityMinutes ?? null,
    revision: d.revision,
    createdUTC: d.createdUTC,
  };
}

/** What the audit log keeps of a device: the record, without the last contact (not a change). */
export function auditedDevice(d: DeviceRecord): Omit<ManagedDevice, 'lastContactUTC'> {
  const { lastContactUTC: _contact, ...rest } = managedDevice(d, null);
  return rest;
}

export const LABELS_SCHEMA = {
  type: 'object',
  additionalProperties: str,
  description: 'Labels by key, e.g. {"site": "amsterdam"}.',
};

export const MANAGED_DEVICE_SCHEMA = objectOf({
  deviceName: str,
  displayName: str,
  definitionIsPublic: bool,
  definitionName: str,
  lastContactUTC: ts,
  labels: LABELS_SCHEMA,
  availabilityMinutes: { type: ['number', 'null'] },
  revision: int,
  createdUTC: str,
});

export const MANAGED_DEVICES_SCHEMA = arrayOf(MANAGED_DEVICE_SCHEMA);
