/**
 * Redis keys of current state: one hash per device, the availability deadlines and each
 * environment's alarm index. The layout of a state hash (fields per data point and per device) is
 * below, the alarm index's in lua/alarm-index.lua; docs/processing.md describes the whole key schema.
 */
export interface StateKeys {
  readonly prefix: string;
  /** Hash of current state: `<sensor>|<field>` per data point plus `@<field>` per device. */
  deviceState(env: string, device: string): string;
  /** Sorted set of `env\ndevice` by availability deadline (epoch ms). */
  availabilityDeadlines(): string;
  /**
   * Sorted set of `env\ndevice` by the device's next timer (epoch ms): the deadline of a rule that
   * waits (`for`) or when a data point goes stale; the scheduler queues a tick for it when due.
   */
  deviceTimers(): string;
  /** The layout version of all the data Vigil keeps in Redis (migrations.ts); absent means 1. */
  stateLayout(): string;
  /** Token of the process running migrations, with an expiry it renews while they run. */
  migrationLock(): string;
  /** SCAN pattern matching every device state hash. */
  stateHashes(): string;
  /** Sorted set of the environment's open alarms, most severe then oldest first (alarm-index.lua). */
  alarmIndex(env: string): string;
  /** Hash of the environment's open alarms: `<device>\n<sensor>` → JSON record (alarm-index.lua). */
  alarmRecords(env: string): string;
  /**
   * Sorted set (scores 0, so by name) of the environment's devices never heard from: a device joins
   * it when created without a last contact (unheard.ts), leaves it with its first contact
   * (written with it by the partition's owner) or its deletion. The fleet counts and lists them without reading every
   * device.
   */
  unheardDevices(env: string): string;
}

export function stateKeys(prefix: string): StateKeys {
  const p = prefix;
  return {
    prefix: p,
    // The device's hash tag, as its tenancy keys have it.
    deviceState: (env, d) => `${p}:state:{${env}/${d}}`,
    availabilityDeadlines: () => `${p}:availability`,
    deviceTimers: () => `${p}:timers`,
    stateLayout: () => `${p}:state-layout`,
    migrationLock: () => `${p}:migration-lock`,
    stateHashes: () => `${p.replace(/[*?[\]\\]/g, '\\$&')}:state:*`,
    alarmIndex: (env) => `${p}:env:${env}:alarms`,
    alarmRecords: (env) => `${p}:env:${env}:alarm-records`,
    unheardDevices: (env) => `${p}:env:${env}:unheard`,
  };
}

/** Fields of a data point inside `deviceState`: `<sensorName>|<field>`. */
export const STATE_FIELD = {
  /** Converted value as JSON (number, string, boolean or {lat, lon}). */
  value: 'v',
  /**
   * Everything else of the data point, packed (point-record.ts): measurement time and sub-ms
   * offset, rule index and rules fingerprint, status, last success, status since, the clock hour of
   * the current value for last24Hours (count, total, min, max, late flag), its receive time, the
   * rules it meets that wait (`for`) and since when, and the value as shown.
   */
  packed: 'p',
} as const;

/** Device-level fields inside `deviceState`. */
export const DEVICE_FIELD = {
  /** Epoch ms of the latest accepted payload's receive time. */
  lastContact: '@lc',
  /** "1" while an Availability (lost) event is open. */
  contactLost: '@lost',
  /** Epoch ms of this device's entry in the availability deadlines set (no later than the real one). */
  deadline: '@dl',
  /** Availability timeout in ms the last payload came with (0: not watched). */
  timeout: '@to',
  /**
   * A counter the worker increments once a step has written a value of this device into a clock
   * hour that had already closed (history-version.ts): readers that keep closed hours keep them
   * per version.
   */
  historyVersion: '@hv',
  /** Epoch ms of this device's entry in the timers set (no later than its earliest deadline). */
  timer: '@tm',
  /** "1" while a data point's stale rule waits for the device's next contact to apply. */
  staleWaits: '@sw',
  /**
   * The version of the state: set afresh by every write of the partition's owner, removed by every
   * other writer, so that the owner's kept state of the device is known to be old
   * (docs/processing.md, who writes a device's state).
   */
  version: '@ver',
} as const;

export const stateField = (sensor: string, field: (typeof STATE_FIELD)[keyof typeof STATE_FIELD]): string =>
  `${sensor}|${field}`;
