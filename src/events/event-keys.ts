/** Redis keys of events: per environment and per device (newest first by score), and the outbox. */
export interface EventKeys {
  readonly prefix: string;
  /** Sorted set of the environment's events (score = receivedUTC ms, member = event JSON). */
  envEvents(env: string): string;
  /** Sorted set of one device's events (same members as envEvents). */
  deviceEvents(env: string, device: string): string;
  /** Stream of created events waiting to be written to InfluxDB (field `e` = event JSON). */
  eventOutbox(): string;
}

export function eventKeys(prefix: string): EventKeys {
  const p = prefix;
  return {
    prefix: p,
    envEvents: (env) => `${p}:env:${env}:events`,
    // The device's hash tag, as its tenancy and state keys have it.
    deviceEvents: (env, d) => `${p}:dev:{${env}/${d}}:events`,
    eventOutbox: () => `${p}:event-outbox`,
  };
}
