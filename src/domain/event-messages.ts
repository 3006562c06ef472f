/**
 * The exact event message strings (docs/interface.md#statuses). Parts are joined with ' - ' and never
 * translated: scripts and Grafana filters match on them.
 */
import type { Status } from './types.ts';

/** `<sensorName> - <description> - <STATUS> - <currentValue>`: a data point changed status. */
export function sensorEventMessage(
  sensorName: string,
  description: string,
  status: Status,
  currentValue: string,
): string {
  return `${sensorName} - ${description} - ${status} - ${currentValue}`;
}

/** `<sensorName> - Returned to success status - SUCCESS - <currentValue>`. */
export function returnedToSuccessMessage(sensorName: string, currentValue: string): string {
  return `${sensorName} - Returned to success status - SUCCESS - ${currentValue}`;
}

/**
 * `availability - No contact for <n> minutes - <STATUS> - <lastContactUTC>`. `minutes` is whole
 * minutes since the last contact (always "minutes", even for 1: the contract fixes the text).
 */
export function availabilityLostMessage(minutes: number, lastContactIso: string, status: Status): string {
  return `availability - No contact for ${Math.floor(minutes)} minutes - ${status} - ${lastContactIso}`;
}

/** `availability - Contact restored - SUCCESS - <contactIso>`. */
export function availabilityRestoredMessage(contactIso: string): string {
  return `availability - Contact restored - SUCCESS - ${contactIso}`;
}

/** Whole minutes between the last contact and now (the Availability event's sensorValue). */
export function minutesWithoutContact(lastContactMs: number, nowMs: number): number {
  return Math.max(0, Math.floor((nowMs - lastContactMs) / 60_000));
}
