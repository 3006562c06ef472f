/**
 * Current state in Redis: applies readings atomically per device (one Lua script call per up to
 * DEVICES_PER_CALL devices, all calls of a step in one pipeline) and marks lost contact exactly once.
 */
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { replyCode } from '../redis/reply-code.ts';
import { NO_MATCH } from '../domain/thresholds.ts';
import type { Status } from '../domain/types.ts';
import { LeaseLostError } from '../errors/lease-lost.ts';
import { AppError } from '../errors/app-error.ts';
import type { EventKeys } from '../events/event-keys.ts';
import { withAlarmIndex } from './alarm-index.ts';
import type { StateKeys } from './state-keys.ts';

const lua = (file: string) => readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8');
/** The state script as Redis runs it: `apply` (apply-readings.lua) with the functions it uses in front. */
export const composeStateScript = (apply: string): string =>
  withAlarmIndex(`${lua('status-steps.lua')}\n${apply}`);
const applyLua = composeStateScript(lua('apply-readings.lua'));
const lostLua = withAlarmIndex(lua('mark-contact-lost.lua'));

/** What the Lua script needs to know of one data point (once per device and job). */
export interface SensorMeta {
  /** Status of each rule, by rule index. */
  statuses: Status[];
  /** Event text of each rule ("Above 25 °C" or the rule's own, then " for 10 min" when it waits). */
  descriptions: string[];
  /** Fingerprint of the rule list (a stored rule index is only valid for the same list). */
  rulesId: string;
  suppressed: boolean;
  sensorType: string;
  /** When a rule waits (`for`): each rule's duration in ms, 0 for a rule that applies at once. */
  forMs?: number[];
  /** The stale rule, with its event text ("No value for 30 min"). */
  stale?: { afterMs: number; status: Status; text: string };
}

/** One converted value to apply. */
export interface StateValue {
  sensor: string;
  /** Measurement time, epoch ms. */
  timeMs: number;
  /** Sub-ms tiebreak (ns). */
  offsetNs: number;
  /** JSON of the converted value. */
  valueJson: string;
  /** Formatted value with units. */
  currentValue: string;
  /** Rule index reached for each previous rule index -1..n-1 (the domain's possibleOutcomes). */
  outcomes: readonly number[];
  /**
   * When the data point's rules wait (`for`): the rules the value meets, in preference order, for
   * each previous rule (the domain's possibleMatches); the state step enters the first whose
   * duration is met.
   */
  matches?: readonly (readonly number[])[];
  /** When the payload carrying the value was received, epoch ms (stale rules count from it). */
  receivedMs: number;
  /**
   * The number history aggregates (numericValue): for numeric types the value itself, so
   * `valueJson` is its JSON; 1/0 for booleans; null for text and GPS values.
   */
  number: number | null;
}

export interface DeviceReadings {
  env: string;
  device: string;
  displayName: string;
  /** Receive time of the newest accepted payload of this device in the job (0 = none). */
  contactMs: number;
  /** Availability timeout in ms (0 = not monitored). */
  timeoutMs: number;
  /** Rule metadata of each data point with a value, by sensor name. */
  sensors: ReadonlyMap<string, SensorMeta>;
  /** Sorted by (timeMs, offsetNs). */
  values: StateValue[];
  /**
   * The device's timer came due: apply what is due by now to every data point with timers, which
   * `sensors` must then hold, and set the timer to the next one.
   */
  tick?: boolean;
  /**
   * The values include one of every data point of the device's definition, so the script knows
   * all of its deadlines and moves a timer that came early for them (apply-readings.lua).
   */
  allPoints?: boolean;
}

/**
 * What applying one device's readings gave: the status applied to each value (null where the value
 * was older than the stored one, so history only, or a replay), or the error with which the state
 * script refused this device's data (it then wrote nothing of it).
 */
export type DeviceApplied = (Status | null)[] | RefusedReadings;

export interface RefusedReadings {
  refused: Error;
}

/**
 * Keys that must hold given values for a state call to write anything (the worker's partition
 * leases and their fencing tokens), checked inside the script.
 */
export interface StateGuard {
  readonly leaseKeys: readonly string[];
  readonly values: readonly string[];
}

export interface StateStore {
  /**
   * Applies each device's readings, in the order given. A device whose data the script refuses is
   * reported as such and the others are applied; only an infrastructure fault (Redis unreachable,
   * a command timed out) rejects, and a state stored in a layout this version does not know
   * (STATE_LAYOUT_UNKNOWN: not the data's fault, and nothing of that device is applied); it rejects
   * with LeaseLostError when `guard` no longer holds.
   */
  applyReadings(batch: DeviceReadings[], nowMs: number, guard?: StateGuard): Promise<DeviceApplied[]>;
  /**
   * Creates the Availability event of a device whose deadline passed, if the deadline is still
   * `deadlineMs` (no contact since) — exactly once across schedulers. Returns true when created.
   */
  markContactLost(
    env: string,
    device: string,
    deadlineMs: number,
    eventJson: string,
    nowMs: number,
  ): Promise<boolean>;
  /**
   * Moves the due deadline entries of devices with contact since to their real deadline (last
   * contact + timeout), in one round trip; an entry whose device turns out to be lost stays for
   * markContactLost. Returns the number moved.
   */
  moveDeadlines(due: readonly DueDeadline[], nowMs: number): Promise<number>;
}

/** An entry of the availability deadlines set, with the score a scheduler read. */
export interface DueDeadline {
  env: string;
  device: string;
  deadlineMs: number;
}

type ScriptRedis = Redis & {
  vigilApplyReadings(numberOfKeys: number, ...args: string[]): Promise<string[][]>;
  vigilMarkContactLost(...args: (string | number)[]): Promise<number>;
};

/**
 * Devices per script call: calls are pipelined, and a call runs alone in Redis, so this bounds
 * how long one call holds Redis up (64 devices: about 2 ms) while sharing the per-call cost.
 */
export const DEVICES_PER_CALL = 64;

export function createStateStore(deps: {
  redis: Redis;
  keys: EventKeys & StateKeys;
  eventsCap: number;
  outboxMax?: number;
}): StateStore {
  const { keys } = deps;
  const redis = deps.redis as ScriptRedis;
  const outboxMax = deps.outboxMax ?? 1_000_000;
  if (typeof (deps.redis as unknown as { vigilApplyReadings?: unknown }).vigilApplyReadings !== 'function') {
    redis.defineCommand('vigilApplyReadings', { lua: applyLua });
    redis.defineCommand('vigilMarkContactLost', { numberOfKeys: 7, lua: lostLua });
  }
  const markLostArgs = (d: DueDeadline, eventJson: string, nowMs: number): (string | number)[] => [
    keys.availabilityDeadlines(),
    keys.deviceState(d.env, d.device),
    keys.envEvents(d.env),
    keys.deviceEvents(d.env, d.device),
    keys.eventOutbox(),
    keys.alarmIndex(d.env),
    keys.alarmRecords(d.env),
    `${d.env}\n${d.device}`,
    d.deadlineMs,
    eventJson,
    nowMs,
    deps.eventsCap,
    outboxMax,
  ];
  /** One script call per element of `calls`, pipelined: each call's reply, or the error it raised. */
  async function runCalls(
    calls: readonly DeviceReadings[][],
    nowMs: number,
    guard: StateGuard | undefined,
  ): Promise<(string[][] | Error)[]> {
    const pipeline = redis.pipeline() as unknown as ScriptRedis & {
      exec(): Promise<[Error | null, unknown][] | null>;
    };
    for (const devices of calls) {
      const keyList = [keys.availabilityDeadlines(), keys.eventOutbox(), keys.deviceTimers()];
      for (const d of devices) {
        keyList.push(
          keys.deviceState(d.env, d.device),
          keys.envEvents(d.env),
          keys.deviceEvents(d.env, d.device),
          keys.alarmIndex(d.env),
          keys.alarmRecords(d.env),
          keys.unheardDevices(d.env),
        );
      }
      const scriptArg: ScriptArg = toScriptArg(devices, nowMs, deps.eventsCap, outboxMax);
      if (guard) {
        keyList.push(...guard.leaseKeys);
        scriptArg.g = guard.values;
      }
      const arg = JSON.stringify(scriptArg);
      void pipeline.vigilApplyReadings(keyList.length, ...keyList, arg);
    }
    const results = await pipeline.exec();
    if (!results) throw new Error('Redis pipeline returned nothing');
    return results.map(([err, res]) => {
      if (!err) return res as string[][];
      // An error reply: the script failed on the data of the call — unless it says the worker lost
      // the call's lease, or that the stored state is of a layout it does not know, which no
      // payload caused. Any other error (connection lost, command timed out) is the
      // infrastructure's and fails the step.
      const code = replyCode(err);
      if (code === undefined) throw err;
      if (code === 'VIGIL_GUARD_LOST') throw new LeaseLostError(err.message);
      if (code === 'STATE_LAYOUT_UNKNOWN') {
        throw new AppError('STATE_LAYOUT_UNKNOWN', err.message, { cause: err });
      }
      return err;
    });
  }

  return {
    async applyReadings(batch, nowMs, guard) {
      if (batch.length === 0) return [];
      const calls: DeviceReadings[][] = [];
      for (let i = 0; i < batch.length; i += DEVICES_PER_CALL)
        calls.push(batch.slice(i, i + DEVICES_PER_CALL));
      const replies = await runCalls(calls, nowMs, guard);
      // The devices of a refused call again, each in a call of its own, to find whose data the
      // script cannot take. The devices before it in the refused call were applied (a script's
      // writes stay); applying is by measurement time, so their second run changes nothing
      // (apply-readings.lua: a device's writes come after everything that can fail on its data).
      const again = calls.filter((_, c) => replies[c] instanceof Error).flat();
      const alone =
        again.length > 0
          ? await runCalls(
              again.map((d) => [d]),
              nowMs,
              guard,
            )
          : [];
      let next = 0;
      return replies.flatMap((reply, c): DeviceApplied[] => {
        if (!(reply instanceof Error)) return reply.map(statusesOf);
        return calls[c]!.map(() => {
          const own = alone[next++]!;
          return own instanceof Error ? { refused: own } : statusesOf(own[0]!);
        });
      });
    },
    async markContactLost(env, device, deadlineMs, eventJson, nowMs) {
      const created = await redis.vigilMarkContactLost(
        ...markLostArgs({ env, device, deadlineMs }, eventJson, nowMs),
      );
      return created === 1;
    },
    async moveDeadlines(due, nowMs) {
      if (due.length === 0) return 0;
      const pipeline = redis.pipeline() as unknown as ScriptRedis & {
        exec(): Promise<[Error | null, unknown][] | null>;
      };
      for (const d of due) void pipeline.vigilMarkContactLost(...markLostArgs(d, '', nowMs));
      const results = (await pipeline.exec()) ?? [];
      let moved = 0;
      for (const [err, res] of results) {
        if (err) throw err;
        if (res === 2) moved += 1;
      }
      return moved;
    },
  };
}

/**
 * The script's argument (apply-readings.lua documents the layout): rule metadata once per distinct
 * object, devices by position, and each device's values flat, VALUE_STRIDE slots per value. Flat
 * rather than one list per value, and a value's outcomes as one number when every previous rule
 * gives the same: the script's JSON decoding makes a Lua table per list, and that was most of its
 * cost per value.
 */
function toScriptArg(devices: DeviceReadings[], nowMs: number, eventsCap: number, outboxMax: number) {
  const metaIndex = new Map<SensorMeta, number>();
  const m: ScriptMeta[] = [];
  const d = devices.map((dev) => {
    const names: string[] = [];
    const metas: number[] = [];
    const position = new Map<string, number>();
    for (const [name, meta] of dev.sensors) {
      let index = metaIndex.get(meta);
      if (index === undefined) {
        index = m.length + 1;
        metaIndex.set(meta, index);
        m.push(scriptMeta(meta));
      }
      names.push(name);
      metas.push(index);
      position.set(name, names.length);
    }
    const flat: unknown[] = [];
    for (const v of dev.values) {
      flat.push(
        position.get(v.sensor),
        v.timeMs,
        v.offsetNs,
        v.valueJson,
        v.currentValue,
        v.matches ? scriptMatches(v.matches) : uniform(v.outcomes) ? v.outcomes[0] : v.outcomes,
        // true: the number is the value's JSON itself (numeric types), which the script reads back
        // rather than the worker writing the same number twice; else a boolean's 1/0, or none.
        v.number === null ? false : isNumberJson(v.valueJson) ? true : v.number,
        v.receivedMs,
      );
    }
    return [
      dev.env,
      dev.device,
      dev.displayName,
      dev.contactMs,
      new Date(dev.contactMs || nowMs).toISOString(),
      dev.timeoutMs,
      names,
      metas,
      flat,
      dev.tick ? 1 : 0,
      dev.allPoints ? 1 : 0,
    ];
  });
  return { n: nowMs, cap: eventsCap, omax: outboxMax, m, d };
}

type ScriptArg = ReturnType<typeof toScriptArg> & { g?: readonly string[] };

/** A data point's rule metadata as the script reads it (apply-readings.lua documents the fields). */
interface ScriptMeta {
  st: Status[];
  ds: string[];
  ri: string;
  sup: number;
  ty: string;
  fd?: number[];
  sa?: number;
  ss?: Status;
  sd?: string;
}

function scriptMeta(meta: SensorMeta): ScriptMeta {
  const m: ScriptMeta = {
    st: meta.statuses,
    ds: meta.descriptions,
    ri: meta.rulesId,
    sup: meta.suppressed ? 1 : 0,
    ty: meta.sensorType,
  };
  if (meta.forMs) m.fd = meta.forMs;
  if (meta.stale) {
    m.sa = meta.stale.afterMs;
    m.ss = meta.stale.status;
    m.sd = meta.stale.text;
  }
  return m;
}

/** The code of an error reply: its first word (`ERR`, or the one a script chose). */

const statusesOf = (device: string[]): (Status | null)[] =>
  device.map((s) => (s === '' ? null : (s as Status)));

/**
 * The rules met as the script reads them: -1 when the value meets none (most values: the script
 * decodes no list for them), else the lists.
 */
const scriptMatches = (matches: readonly (readonly number[])[]): unknown =>
  matches === NO_MATCH ? -1 : matches;

/** JSON text of a number (a boolean's is `true`/`false`, text and GPS have no number). */
const isNumberJson = (json: string): boolean => {
  const c = json.charCodeAt(0);
  return c === 45 || (c >= 48 && c <= 57);
};

function uniform(outcomes: readonly number[]): boolean {
  for (let i = 1; i < outcomes.length; i++) if (outcomes[i] !== outcomes[0]) return false;
  return true;
}
