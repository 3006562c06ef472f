/**
 * The worker's read-through cache of tenancy records (environments, pre-parsers, devices,
 * definitions, threshold overrides, suppressions). A busy worker reads each record about once a
 * second (`ttlMs`), not per payload. Changes reach it sooner: every administrative change raises
 * its scope's catalog epoch (TenancyKeys.catalogEpochs) before it is answered, and a worker calls
 * `refresh` with a step's environments once the step's payloads are read — so a payload accepted
 * after a change was answered is processed with it (a definition published, a device moved to
 * another definition), in every worker. Changes that do not raise an epoch (made by an older
 * version) still reach it within `ttlMs`.
 */
import { DEV_EUI_LABEL, normalDevEui } from '../domain/identifiers.ts';
import { createLoadingCache, type LoadingCache } from '../lib/loading-cache.ts';
import type { DeviceSettings, TenancyStore } from './tenancy-store.ts';
import type { DefinitionRecord, DeviceRecord, Environment, PreparserRecord } from './types.ts';

export interface Catalog {
  environment(env: string): Promise<Environment | null>;
  preparser(env: string): Promise<PreparserRecord | null>;
  /** Devices by name, one pipelined read for the names not cached. */
  devices(env: string, names: string[]): Promise<Map<string, DeviceRecord>>;
  /**
   * Devices by DevEUI (their `devEui` label; either case asked, keys lowercase), those found only:
   * one HMGET for the DevEUIs not cached, then `devices` for their names. Cached and forgotten as
   * `devices` is, so a device created or relabelled is found after the refresh that shows it.
   */
  devicesByDevEui(env: string, euis: readonly string[]): Promise<Map<string, DeviceRecord>>;
  definition(env: string, name: string, isPublic: boolean): Promise<DefinitionRecord | null>;
  /**
   * Threshold overrides and suppressions of `devices` (every name present), one pipelined read for
   * the names not cached: a step gets all it needs at once instead of awaiting each device.
   */
  deviceSettings(env: string, devices: string[]): Promise<Map<string, DeviceSettings>>;
  /**
   * Reads the catalog epochs of `envs` and of public definitions; when one moved since it was last
   * read (or is read for the first time), forgets everything cached. One HMGET per call.
   */
  refresh(envs: readonly string[]): Promise<void>;
}

const NO_SETTINGS: DeviceSettings = { overrides: new Map(), suppressed: new Map() };

/**
 * Entries of each of the catalog's caches. A worker reads every device of its partitions in turn:
 * a cache smaller than that fleet evicts each device before it sends again and misses every time.
 */
const MAX_ENTRIES = 1_000_000;

export function createCatalog(deps: {
  tenancy: TenancyStore;
  ttlMs?: number;
  clock?: () => number;
}): Catalog {
  const { tenancy } = deps;
  const ttlMs = deps.ttlMs ?? 1000;
  const cache = <V>() =>
    createLoadingCache<V>({ ttlMs, max: MAX_ENTRIES, ...(deps.clock ? { now: deps.clock } : {}) });
  const envs = cache<Environment | null>();
  const preparsers = cache<PreparserRecord | null>();
  const devices = cache<DeviceRecord | null>();
  const definitions = cache<DefinitionRecord | null>();
  const settings = cache<DeviceSettings>();
  /** DevEUI → the name of the device that holds it (null: none). */
  const holders = cache<string | null>();
  const caches = [envs, preparsers, devices, definitions, settings, holders];
  /** The epochs last read, by scope. */
  const epochs = new Map<string, string>();
  /** Counts forgettings: a batch read that started before one is not kept. */
  let generation = 0;
  const readBatch = <V>(
    c: LoadingCache<V>,
    env: string,
    names: readonly string[],
    load: (missing: string[]) => Promise<V[]>,
  ) => readThrough(c, env, names, load, () => generation);
  async function devicesByName(env: string, names: string[]) {
    const records = await readBatch(devices, env, names, async (missing) => {
      const got = await tenancy.getDevices(env, missing);
      return missing.map((_, i) => got[i] ?? null);
    });
    // Unknown devices are cached (as null) but not returned.
    for (const [name, record] of records) if (!record) records.delete(name);
    return records as Map<string, DeviceRecord>;
  }

  return {
    async refresh(scopes) {
      const wanted = ['public', ...new Set(scopes)];
      const read = await tenancy.catalogEpochs(wanted);
      let moved = false;
      wanted.forEach((scope, i) => {
        const epoch = read[i] ?? '0';
        if (epochs.get(scope) !== epoch) moved = true;
        epochs.set(scope, epoch);
      });
      if (!moved) return;
      generation++;
      for (const c of caches) c.clear();
    },
    environment: (env) => envs.get(env, () => tenancy.getEnvironment(env)),
    preparser: (env) => preparsers.get(env, () => tenancy.getPreparser(env)),
    devices: devicesByName,
    async devicesByDevEui(env, asked) {
      const euis = asked.map(normalDevEui).filter((e): e is string => e !== null);
      const names = await readBatch(holders, env, euis, (missing) => tenancy.devEuiOwners(env, missing));
      const held = [...names].filter((pair): pair is [string, string] => pair[1] !== null);
      const records = await devicesByName(
        env,
        held.map(([, name]) => name),
      );
      const found = new Map<string, DeviceRecord>();
      for (const [eui, name] of held) {
        const record = records.get(name);
        // A holder read before a refresh and a record read after it may disagree: the record says.
        if (record?.labels[DEV_EUI_LABEL] === eui) found.set(eui, record);
      }
      return found;
    },
    definition: (env, name, isPublic) =>
      definitions.get(isPublic ? `public\n${name}` : `${env}\n${name}`, () =>
        tenancy.getDefinition(env, name, isPublic),
      ),
    deviceSettings: (env, names) =>
      readBatch(settings, env, names, async (missing) => {
        const got = await tenancy.getDeviceSettings(env, missing);
        return missing.map((_, i) => got[i] ?? NO_SETTINGS);
      }),
  };
}

/**
 * Values of `names` from `cache` (key `env\nname`), the ones not cached read with one `load` call
 * (a pipelined read) that answers one value per missing name, in order; all are cached.
 */
async function readThrough<V>(
  cache: LoadingCache<V>,
  env: string,
  names: readonly string[],
  load: (missing: string[]) => Promise<V[]>,
  generation: () => number,
): Promise<Map<string, V>> {
  const found = new Map<string, V>();
  const missing: string[] = [];
  for (const name of new Set(names)) {
    const hit = cache.peek(`${env}\n${name}`);
    if (hit === undefined) missing.push(name);
    else found.set(name, hit);
  }
  if (missing.length > 0) {
    const started = generation();
    const loaded = await load(missing);
    // Read before the catalog forgot what it had: right for this step, not to be kept.
    const keep = generation() === started;
    missing.forEach((name, i) => {
      const value = loaded[i] as V;
      if (keep) cache.set(`${env}\n${name}`, value);
      found.set(name, value);
    });
  }
  return found;
}
