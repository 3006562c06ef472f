/**
 * What the sensors endpoints read of Redis, in as few round trips as the data allows: the state of
 * the data points shown, in one pipeline, with the environment's locale, the device records and
 * their definitions from what this process keeps of them until Redis says they changed
 * (redis/tracked-hashes.ts). The pipeline reads the state fields of the definition each device had
 * the last time it was asked for (or of the data points the request names); the guess is checked
 * against the device's definition and that definition's text, and a wrong one costs one more round
 * trip, never a stale answer.
 */
import type { DataPointSpec, DefinitionSpec, Locale } from '../domain/types.ts';
import type { Redis } from '../redis/connect.ts';
import { createPipelinedReads } from '../redis/pipelined-reads.ts';
import type { TrackedHashes } from '../redis/tracked-hashes.ts';
import type { StateKeys } from '../state/state-keys.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import {
  emptyState,
  planStateRead,
  queueStateRead,
  stateFromQueued,
  type DeviceStateHash,
  type StateRead,
} from '../state/read-state.ts';
import { decodeDevice } from '../tenancy/records.ts';
import { scopeOf } from '../tenancy/tenancy-store.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import { deviceNotFound } from './devices-routes.ts';

/** A device with everything needed to shape its data points. */
export interface LoadedDevice {
  device: DeviceRecord;
  /** Its definition's data points ([] when the definition is missing). */
  dataPoints: DataPointSpec[];
  state: DeviceStateHash;
}

export interface LoadedDevices {
  locale: Locale;
  /** In the order asked. */
  devices: LoadedDevice[];
}

/**
 * Loads `names` (DEVICE_NOT_FOUND names the first unknown one). `sensorsOf` names the data points
 * whose state is needed; without it, every data point of the device's definition.
 */
export type LoadDevices = (
  env: string,
  names: readonly string[],
  sensorsOf?: (device: string) => readonly string[],
) => Promise<LoadedDevices>;

/** Most remembered device → definition guesses and parsed definitions. */
const MAX_REMEMBERED = 10_000;

interface ParsedDefinition {
  text: string;
  dataPoints: DataPointSpec[];
  names: string[];
}

/** One device's reads in the first pipeline. */
interface Plan {
  /** Redis key of the definition the device had last time. */
  guess: string | undefined;
  /** The data points whose state is read, or undefined when the state is not read yet. */
  sensors: readonly string[] | undefined;
  read: StateRead;
}

/**
 * `redis` reads what changes with every value (the state); `hashes` keeps what seldom changes —
 * environments' locales, definitions and device records — until Redis says it changed (client-side
 * caching), so a request's one round trip carries only its devices' state reads.
 */
export function createSensorReads(deps: {
  redis: Redis;
  keys: TenancyKeys & StateKeys;
  hashes: Pick<TrackedHashes, 'hgetall'>;
}): LoadDevices {
  const { keys, hashes } = deps;
  // Concurrent requests' commands share writes: one Redis round trip per event-loop turn.
  const read = createPipelinedReads(deps.redis);
  /** `env\ndevice` → Redis key of the definition it had. */
  const lastDefinition = new Map<string, string>();
  /** Redis key of a definition → its parsed spec. */
  const parsed = new Map<string, ParsedDefinition>();

  function remember<V>(map: Map<string, V>, key: string, value: V): void {
    if (map.get(key) === value) return;
    map.delete(key);
    map.set(key, value);
    if (map.size > MAX_REMEMBERED) map.delete(map.keys().next().value ?? '');
  }

  /** The parsed definition for `text`: the same object as long as the text does not change. */
  function parse(defKey: string, text: string | undefined): ParsedDefinition | null {
    if (text === undefined) return null;
    const known = parsed.get(defKey);
    if (known?.text === text) return known;
    const dataPoints = (JSON.parse(text) as DefinitionSpec).dataPoints;
    const fresh = { text, dataPoints, names: dataPoints.map((dp) => dp.name) };
    remember(parsed, defKey, fresh);
    return fresh;
  }

  function plan(
    env: string,
    device: string,
    sensorsOf: ((device: string) => readonly string[]) | undefined,
  ): Plan {
    const guess = lastDefinition.get(`${env}\n${device}`);
    const sensors = sensorsOf
      ? sensorsOf(device)
      : guess === undefined
        ? undefined
        : parsed.get(guess)?.names;
    const read = planStateRead(sensors ?? []);
    return { guess, sensors: read.fields.length > 0 ? sensors : undefined, read };
  }

  return async (env, names, sensorsOf) => {
    const plans = names.map((n) => plan(env, n, sensorsOf));
    const [replies, envHash, records] = await Promise.all([
      read((pipe) => {
        names.forEach((n, i) => {
          const p = plans[i];
          if (p?.sensors) queueStateRead(pipe, keys, env, n, p.read);
        });
      }),
      hashes.hgetall(keys.env(env)),
      Promise.all(names.map((n) => hashes.hgetall(keys.device(env, n)))),
    ]);
    let at = 0;
    const next = () => replies[at++];
    const locale: Locale = envHash.locale === 'nl' ? 'nl' : 'en';
    const devices = names.map((n, i) => deviceOf(env, n, records[i] ?? {}));
    const defKeys = devices.map((d) => keys.definition(scopeOf(env, d.definitionIsPublic), d.definitionName));
    const heads = new Map(
      await Promise.all([...new Set(defKeys)].map(async (k) => [k, await hashes.hgetall(k)] as const)),
    );
    const definitions = defKeys.map((k) => parse(k, heads.get(k)?.spec));
    const states = plans.map((p, i) => {
      if (!p.sensors) return undefined;
      const state = stateFromQueued(p.read, next);
      // Data points taken from a guessed definition are right only if the device still has that
      // definition, with the same text (parse gave the same object back).
      const right =
        sensorsOf !== undefined || (p.guess === defKeys[i] && p.sensors === definitions[i]?.names);
      return right ? state : undefined;
    });
    await readMissingStates(env, names, definitions, states);
    names.forEach((n, i) => remember(lastDefinition, `${env}\n${n}`, defKeys[i] ?? ''));
    return {
      locale,
      devices: devices.map((device, i) => ({
        device,
        dataPoints: definitions[i]?.dataPoints ?? [],
        state: states[i] ?? emptyState(),
      })),
    };
  };

  /** Reads, in one more pipeline, the states the first one did not get right. */
  async function readMissingStates(
    env: string,
    names: readonly string[],
    definitions: (ParsedDefinition | null)[],
    states: (DeviceStateHash | undefined)[],
  ): Promise<void> {
    const wanted = names.flatMap((n, i) => {
      const plan = planStateRead(definitions[i]?.names ?? []);
      // A device without data points has no state to show (and HMGET needs a field).
      if (states[i] === undefined && plan.fields.length === 0) states[i] = emptyState();
      return states[i] === undefined ? [{ i, n, plan }] : [];
    });
    if (wanted.length === 0) return;
    const replies = await read((pipe) => {
      for (const w of wanted) queueStateRead(pipe, keys, env, w.n, w.plan);
    });
    let at = 0;
    const next = () => replies[at++];
    for (const w of wanted) states[w.i] = stateFromQueued(w.plan, next);
  }
}

/**
 * Device records decoded from the hashes kept (the same object while a record does not change):
 * decoded once, not per request.
 */
const decoded = new WeakMap<Record<string, string>, DeviceRecord>();

/** The device record out of its hash; DEVICE_NOT_FOUND when absent. */
function deviceOf(env: string, name: string, hash: Record<string, string>): DeviceRecord {
  const known = decoded.get(hash);
  if (known?.env === env && known.deviceName === name) return known;
  const device = decodeDevice(env, name, hash);
  if (!device) throw deviceNotFound(name);
  decoded.set(hash, device);
  return device;
}
