/**
 * The field tables of docs/interface.md#resources as key sets with types, and the check that a
 * response object has exactly those keys with those types.
 */
import { expect } from 'vitest';

export const TIMESTAMP = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
export type FieldType =
  'string' | 'boolean' | 'number' | 'timestamp' | 'timestamp?' | 'any' | 'array' | 'value?' | 'string?';

/** Asserts the exact key set and each field's type. */
export function expectShape(obj: Record<string, unknown>, shape: Record<string, FieldType>) {
  expect(Object.keys(obj).sort()).toEqual(Object.keys(shape).sort());
  for (const [key, type] of Object.entries(shape)) {
    const v = obj[key];
    const ok = {
      string: typeof v === 'string',
      'string?': v === null || typeof v === 'string',
      boolean: typeof v === 'boolean',
      number: typeof v === 'number',
      timestamp: typeof v === 'string' && TIMESTAMP.test(v),
      'timestamp?': v === null || (typeof v === 'string' && TIMESTAMP.test(v)),
      any: true,
      array: Array.isArray(v),
      'value?': v === null || ['string', 'number', 'boolean', 'object'].includes(typeof v),
    }[type];
    expect(ok, `${key} should be ${type}, is ${JSON.stringify(v)}`).toBe(true);
  }
}

export const DEVICE: Record<string, FieldType> = {
  deviceName: 'string',
  displayName: 'string',
  definitionIsPublic: 'boolean',
  definitionName: 'string',
  lastContactUTC: 'timestamp?',
  // Vigil's own field beside the published ones: the device's labels ({} when none).
  labels: 'any',
};
export const COMMON: Record<string, FieldType> = {
  sensorName: 'string',
  displayName: 'string',
  sensorType: 'string',
  currentValue: 'string?',
  rawValue: 'value?',
  suppressed: 'boolean',
  currentStatus: 'string',
  units: 'string',
};
export const LISTED: Record<string, FieldType> = {
  ...COMMON,
  lastSuccessAt: 'timestamp?',
  currentSuccessAt: 'timestamp?',
  updatedAt: 'timestamp?',
};
export const UTC: Record<string, FieldType> = {
  ...COMMON,
  timeSinceLastSuccessUTC: 'timestamp?',
  timeSinceCurrentStatusUTC: 'timestamp?',
  updatedUTC: 'timestamp?',
};
export const DETAILS: Record<string, FieldType> = { ...UTC, last24Hours: 'array' };
export const BUCKET: Record<string, FieldType> = {
  sUTC: 'number',
  eUTC: 'number',
  count: 'number',
  total: 'number',
  max: 'number',
  min: 'number',
  avg: 'number',
};
export const EVENT: Record<string, FieldType> = {
  deviceName: 'string',
  displayName: 'string',
  sensorName: 'string',
  sensorType: 'string',
  sensorValue: 'any',
  eventStatus: 'string',
  eventCategory: 'string',
  eventMessage: 'string',
  receivedUTC: 'timestamp',
};
