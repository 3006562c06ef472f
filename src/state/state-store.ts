/**
 * Current state in Redis, written by the partition's owner: it decides each device's step in
 * TypeScript (domain/device-step.ts) on the state it holds — read once, then kept while its writes
 * land — and writes the result in one fenced call per DEVICES_PER_CALL devices (lua/fenced-writes.lua),
 * all calls of a step in one pipeline. The call writes nothing once a lease the step read under has
 * changed hands, and nothing of a device whose state another writer changed since the owner read it
 * (the version field, VERSION_FIELD): the owner reads that device again and decides again. The
 * scheduler marks lost contact exactly once (lua/mark-contact-lost.lua).
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Redis } from 'ioredis';
import { LRUCache } from 'lru-cache';
import { runDeviceStep, settlePoints, type DeviceOutcome, type DeviceState } from '../domain/device-step.ts';
import { createEventSequence, eventOfChange } from '../domain/event-record.ts';
import { alarmScore, nextAlarm, type StoredAlarm } from '../domain/alarm-record.ts';
import type { PointRules, PointValue } from '../domain/point-step.ts';
import type { Status } from '../domain/types.ts';
import { LeaseLostError } from '../errors/lease-lost.ts';
import { isAppError } from '../errors/app-error.ts';
import type { EventKeys } from '../events/event-keys.ts';
import { replyCode } from '../redis/reply-code.ts';
import { withAlarmIndex } from './alarm-index.ts';
import { decodeDeviceState, stateWrites, VERSION_FIELD, type LoadedDevice } from './device-state-codec.ts';
import { DEVICE_FIELD, type StateKeys } from './state-keys.ts';

const lua = (file: string) => readFileSync(new URL(`./lua/${file}`, import.meta.url), 'utf8');
const writesLua = lua('fenced-writes.lua');
const lostLua = withAlarmIndex(lua('mark-contact-lost.lua'));

/** What the state step needs to know of one data point's rules (once per device and step). */
export type SensorMeta = PointRules;

/** One converted value to apply, to the data point `sensor`. */
export interface StateValue extends PointValue {
  sensor: string;
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
   * all of its deadlines and moves a timer that came early for them (domain/device-step.ts).
   */
  allPoints?: boolean;
}

/**
 * What applying one device's readings gave: the status applied to each value (null where the value
 * was older than the stored one, so history only, or a replay), or the error its data raised in the
 * step (nothing of it was written).
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
   * Applies each device's readings, in the order given. A device whose data the step cannot take is
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
  vigilFencedWrites(numberOfKeys: number, ...args: (string | Buffer | number)[]): Promise<number[]>;
  vigilMarkContactLost(...args: (string | number)[]): Promise<number>;
};

/**
 * Devices per fenced call: calls are pipelined, and a call runs alone in Redis, so this bounds how
 * long one call holds Redis up while sharing the per-call cost.
 */
export const DEVICES_PER_CALL = 64;
/** Devices whose state a store keeps between steps; the least recently used are read again. */
const DEVICES_KEPT = 200_000;
/** Rounds of reading again the devices another writer changed meanwhile, before the step fails. */
const VERSION_ROUNDS = 5;

/** One device of a step, decided: what to write, and the state it leaves. */
interface Decided {
  readings: DeviceReadings;
  key: string;
  loaded: LoadedDevice;
  outcome: DeviceOutcome | { refused: Error };
  /** The version its writes give the state. */
  version: string;
  /** Its writes include the state hash (so the new version). */
  wrote?: boolean;
}

export function createStateStore(deps: {
  redis: Redis;
  keys: EventKeys & StateKeys;
  eventsCap: number;
  outboxMax?: number;
}): StateStore {
  const { keys } = deps;
  const redis = deps.redis as ScriptRedis;
  if (typeof (deps.redis as unknown as { vigilFencedWrites?: unknown }).vigilFencedWrites !== 'function') {
    redis.defineCommand('vigilFencedWrites', { lua: writesLua });
    redis.defineCommand('vigilMarkContactLost', { numberOfKeys: 7, lua: lostLua });
  }
  const kept = new LRUCache<string, LoadedDevice>({ max: DEVICES_KEPT });
  const eventNs = createEventSequence();
  const writer = randomBytes(6).toString('base64url');
  let writes = 0;
  const nextVersion = () => `${writer}.${(writes++).toString(36)}`;

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
    deps.outboxMax ?? 1_000_000,
  ];

  /** The state of each device, kept or read (one round trip for those not kept). */
  async function load(batch: readonly DeviceReadings[], fresh: boolean): Promise<LoadedDevice[]> {
    const out: (LoadedDevice | undefined)[] = batch.map((d) => (fresh ? undefined : kept.get(keyOf(d))));
    const missing = batch.flatMap((d, i) => (out[i] ? [] : [i]));
    if (missing.length > 0) {
      const pipeline = redis.pipeline();
      for (const i of missing) pipeline.hgetallBuffer(keys.deviceState(batch[i]!.env, batch[i]!.device));
      const replies = (await pipeline.exec()) ?? [];
      missing.forEach((i, n) => {
        const [err, hash] = replies[n] ?? [new Error('Redis pipeline returned nothing'), null];
        if (err) throw err;
        out[i] = decodeDeviceState(batch[i]!.env, batch[i]!.device, hash as Record<string, Buffer>);
      });
    }
    return out as LoadedDevice[];
  }

  /** Runs each device's step on a copy of its state; a fault in one device's data refuses it alone. */
  function decide(batch: readonly DeviceReadings[], loaded: LoadedDevice[], nowMs: number): Decided[] {
    return batch.map((readings, i) => {
      const state = copyOf(loaded[i]!.state);
      const base = { readings, key: keyOf(readings), version: nextVersion() };
      try {
        const outcome = runDeviceStep(state, inputOf(readings), nowMs);
        settlePoints(state);
        return { ...base, loaded: { state, version: loaded[i]!.version }, outcome };
      } catch (err) {
        if (isAppError(err) && err.code === 'STATE_LAYOUT_UNKNOWN') throw err;
        return { ...base, loaded: loaded[i]!, outcome: { refused: err as Error } };
      }
    });
  }

  /** The stored alarms the step's status changes continue (one round trip; none for most steps). */
  async function storedAlarms(decided: readonly Decided[]): Promise<Map<string, StoredAlarm>> {
    const wanted: { env: string; member: string }[] = [];
    for (const d of decided) {
      if ('refused' in d.outcome) continue;
      for (const c of d.outcome.changes) {
        if (c.status !== 'SUCCESS') wanted.push({ env: d.readings.env, member: `${d.readings.device}\n${c.sensor}` });
      }
    }
    const found = new Map<string, StoredAlarm>();
    if (wanted.length === 0) return found;
    const pipeline = redis.pipeline();
    for (const w of wanted) pipeline.hget(keys.alarmRecords(w.env), w.member);
    const replies = (await pipeline.exec()) ?? [];
    wanted.forEach((w, i) => {
      const [err, json] = replies[i] ?? [new Error('Redis pipeline returned nothing'), null];
      if (err) throw err;
      if (typeof json === 'string') found.set(`${w.env}\n${w.member}`, JSON.parse(json) as StoredAlarm);
    });
    return found;
  }

  /** The fenced calls of the decided devices, pipelined: per call, the devices another writer changed. */
  async function write(decided: readonly Decided[], nowMs: number, guard: StateGuard | undefined) {
    const alarms = await storedAlarms(decided);
    const writing = decided.filter((d) => !('refused' in d.outcome));
    const pipeline = redis.pipeline() as unknown as ScriptRedis & {
      exec(): Promise<[Error | null, unknown][] | null>;
    };
    const calls: Decided[][] = [];
    for (let i = 0; i < writing.length; i += DEVICES_PER_CALL) calls.push(writing.slice(i, i + DEVICES_PER_CALL));
    for (const call of calls) {
      const script = new FencedCall(guard);
      for (const d of call) {
        script.device(keys.deviceState(d.readings.env, d.readings.device), d.loaded.version, (add) =>
          deviceCommands(d, alarms, nowMs, add),
        );
      }
      const [keyCount, ...rest] = script.args();
      void pipeline.vigilFencedWrites(keyCount, ...rest);
    }
    const results = (await pipeline.exec()) ?? [];
    const changedMeanwhile: Decided[] = [];
    results.forEach(([err, refused], c) => {
      if (err) {
        if (replyCode(err) === 'VIGIL_GUARD_LOST') throw new LeaseLostError(err.message);
        throw err;
      }
      for (const position of refused as number[]) changedMeanwhile.push(calls[c]![position - 1]!);
    });
    return changedMeanwhile;
  }

  /** The writes of one decided device, in order: state, timers, never-heard set, deadline, events, alarms. */
  function deviceCommands(
    d: Decided,
    alarms: Map<string, StoredAlarm>,
    nowMs: number,
    add: (name: string, key: string, ...args: (string | number | Buffer)[]) => void,
  ): void {
    const outcome = d.outcome as DeviceOutcome;
    const { env, device } = d.readings;
    const stateKey = keys.deviceState(env, device);
    const member = `${env}\n${device}`;
    const hsets = stateWrites(d.loaded.state, outcome, d.version);
    const timer = outcome.timer;
    const others = timer !== undefined || outcome.firstContact || outcome.deadline !== null || outcome.changes.length > 0;
    // Every write of the device's state names a new version, so that another writer's kept state
    // of it is known to be old.
    if (hsets.length === 0 && others) hsets.push([VERSION_FIELD, d.version]);
    d.wrote = hsets.length > 0;
    for (const fields of hsets) add('HSET', stateKey, ...fields);
    if (timer && 'set' in timer) add('ZADD', keys.deviceTimers(), timer.set, member);
    else if (timer) {
      if (timer.entry) add('ZREM', keys.deviceTimers(), member);
      add('HDEL', stateKey, DEVICE_FIELD.timer);
    }
    if (outcome.firstContact) add('ZREM', keys.unheardDevices(env), device);
    if (outcome.deadline !== null) add('ZADD', keys.availabilityDeadlines(), outcome.deadline, member);
    const grown = new Set<string>();
    for (const change of outcome.changes) {
      let json: string | null = null;
      if (change.event) {
        const record = eventOfChange(
          { env, device, displayName: d.readings.displayName },
          { ...change, event: change.event },
          nowMs,
          eventNs(nowMs),
        );
        json = JSON.stringify(record);
        add('ZADD', keys.envEvents(env), nowMs, json);
        add('ZADD', keys.deviceEvents(env, device), nowMs, json);
        add('XADD', keys.eventOutbox(), '*', 'e', json);
        grown.add(keys.envEvents(env)).add(keys.deviceEvents(env, device));
      }
      alarmCommands(env, device, change, json, alarms, add);
    }
    if (deps.eventsCap > 0) for (const key of grown) add('ZREMRANGEBYRANK', key, 0, -(deps.eventsCap + 1));
  }

  /** The alarm's writes for a status change: its record and index entry, or their removal. */
  function alarmCommands(
    env: string,
    device: string,
    change: DeviceOutcome['changes'][number],
    eventJson: string | null,
    alarms: Map<string, StoredAlarm>,
    add: (name: string, key: string, ...args: (string | number | Buffer)[]) => void,
  ): void {
    const member = `${device}\n${change.sensor}`;
    const storedKey = `${env}\n${member}`;
    const next = nextAlarm(
      alarms.get(storedKey) ?? null,
      {
        device,
        sensor: change.sensor,
        category: change.sensor === '' ? 'Availability' : 'Sensors',
        status: change.status,
        atMs: change.atMs,
      },
      eventJson,
    );
    if (next === null) {
      alarms.delete(storedKey);
      add('ZREM', keys.alarmIndex(env), member);
      add('HDEL', keys.alarmRecords(env), member);
      return;
    }
    alarms.set(storedKey, next);
    add('HSET', keys.alarmRecords(env), member, JSON.stringify(next));
    add('ZADD', keys.alarmIndex(env), alarmScore(next), member);
  }

  return {
    async applyReadings(batch, nowMs, guard) {
      if (batch.length === 0) return [];
      const results = new Map<DeviceReadings, DeviceApplied>();
      let round = batch;
      for (let attempt = 0; round.length > 0; attempt++) {
        if (attempt === VERSION_ROUNDS) throw new Error('device state kept changing under the step; retried');
        const decided = decide(round, await load(round, attempt > 0), nowMs);
        let changed: Decided[];
        try {
          changed = await write(decided, nowMs, guard);
        } catch (err) {
          // Whether any call landed is unknown: read these devices again next time.
          for (const d of decided) kept.delete(d.key);
          throw err;
        }
        const again = new Set(changed);
        for (const d of decided) {
          if (again.has(d)) {
            kept.delete(d.key);
            continue;
          }
          if ('refused' in d.outcome) results.set(d.readings, { refused: d.outcome.refused });
          else {
            results.set(d.readings, d.outcome.applied);
            // A state read without a version is not kept: its deletion would not show.
            const version = d.wrote ? d.version : d.loaded.version;
            if (version === '') kept.delete(d.key);
            else kept.set(d.key, { state: d.loaded.state, version });
          }
        }
        round = changed.map((d) => d.readings);
      }
      return batch.map((d) => results.get(d)!);
    },
    async markContactLost(env, device, deadlineMs, eventJson, nowMs) {
      const created = await redis.vigilMarkContactLost(...markLostArgs({ env, device, deadlineMs }, eventJson, nowMs));
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

const keyOf = (d: DeviceReadings): string => `${d.env}\n${d.device}`;

/** The step's input out of the converter's readings. */
function inputOf(d: DeviceReadings) {
  return {
    env: d.env,
    device: d.device,
    contactMs: d.contactMs,
    timeoutMs: d.timeoutMs,
    rules: d.sensors,
    values: d.values,
    tick: d.tick === true,
    allPoints: d.allPoints === true,
  };
}

/**
 * A copy of a device's state for one step: the kept state stays as it was until the step's writes
 * landed, so a refused or failed write leaves nothing half-applied in memory.
 */
function copyOf(state: DeviceState): DeviceState {
  const points = new Map<string, DeviceState['points'] extends Map<string, infer P> ? P : never>();
  for (const [name, p] of state.points) {
    const r = p.record;
    points.set(name, {
      name,
      valueJson: p.valueJson,
      changed: false,
      valueChanged: false,
      record: r ? { ...r, held: r.held.map((h) => ({ ...h })), hour: r.hour ? { ...r.hour } : null } : null,
    });
  }
  return { fields: { ...state.fields }, points };
}

/** The arguments of one fenced-writes.lua call, built device by device. */
class FencedCall {
  private readonly keyIndex = new Map<string, number>();
  private readonly keyList: string[] = [];
  private readonly guardArgs: (string | number)[] = [];
  private readonly body: (string | number | Buffer)[] = [];
  private devices = 0;

  constructor(guard: StateGuard | undefined) {
    const leases = guard?.leaseKeys ?? [];
    this.guardArgs.push(leases.length);
    leases.forEach((key, j) => this.guardArgs.push(this.key(key), guard!.values[j]!));
  }

  device(
    stateKey: string,
    version: string,
    commands: (add: (name: string, key: string, ...args: (string | number | Buffer)[]) => void) => void,
  ): void {
    const countAt = this.body.length + 2;
    this.body.push(this.key(stateKey), version, 0);
    let count = 0;
    commands((name, key, ...args) => {
      this.body.push(args.length + 2, name, this.key(key), ...args);
      count += 1;
    });
    this.body[countAt] = count;
    this.devices += 1;
  }

  args(): [number, ...(string | number | Buffer)[]] {
    return [this.keyList.length, ...this.keyList, ...this.guardArgs, this.devices, ...this.body];
  }

  private key(key: string): number {
    let index = this.keyIndex.get(key);
    if (index === undefined) {
      this.keyList.push(key);
      index = this.keyList.length;
      this.keyIndex.set(key, index);
    }
    return index;
  }
}
