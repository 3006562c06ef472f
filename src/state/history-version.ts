/**
 * A device's history version (`@hv` of its state hash): how often values of the device were
 * written into clock hours that had already closed. The read API keeps the closed hours of
 * last24Hours in memory per data point and version, and reads the version with the state it reads
 * anyway, so a late value shows at once in every API process, at no extra round trip.
 *
 * The worker increments it in the acknowledgement of the step, after InfluxDB has the values: a
 * version bumped before the write would let a request between the two cache the hours without
 * the value under the new version.
 */
import type { RedisCommand } from '../redis/command.ts';
import { DEVICE_FIELD, type StateKeys } from './state-keys.ts';

/** The command that increments the history version of `device`. */
export function bumpHistoryVersion(keys: StateKeys, env: string, device: string): RedisCommand {
  return ['HINCRBY', keys.deviceState(env, device), DEVICE_FIELD.historyVersion, 1];
}

/** The version out of the field's value as read (absent: 0). */
export function historyVersionOf(raw: Buffer | string | null | undefined): number {
  if (raw === null || raw === undefined) return 0;
  const n = Number(raw.toString());
  return Number.isFinite(n) ? n : 0;
}
