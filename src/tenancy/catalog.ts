/**
 * The worker's read-through cache of tenancy records (environments, pre-parsers, devices,
 * definitions, threshold overrides, suppressions). Entries live `ttlMs` (default 1 s), so a new
 * definition version, a device override or a suppression reaches every worker within a second,
 * without a restart, while a busy worker reads each record about once a second, not per payload.
 */
import { createLoadingCache, type LoadingCache } from '../lib/loading-cache.ts';
import type { DeviceSettings, TenancyStore } from './tenancy-store.ts';
import type { DefinitionRecord, DeviceRecord, Environment, PreparserRecord } from './types.ts';

export interface Catalog {
  environment(env: string): Promise<Environment | null>;
  preparser(env: string): Promise<PreparserRecord | null>;
  /** Devices by name, one pipelined read for the names not cached. */
  devices(env: string, names: string[]): Promise<Map<string, DeviceRecord>>;
  definition(env: string, name: string, isPublic: boolean): Promise<DefinitionRecord | null>;
  /**
   * Threshold overrides and suppressions of `devices` (every name present), one pipelined read for
   * the names not cached: a step gets all it needs at once instead of awaiting each device.
   */
  deviceSettings(env: string, devices: string[]): Promise<Map<string, DeviceSettings>>;
}

const NO_SETTINGS: DeviceSettings = { overrides: new Map(), suppressed: new Map() };

export function createCatalog(deps: {
  tenancy: TenancyStore;
  ttlMs?: number;
  clock?: () => number;
}): Catalog {
  const { tenancy } = deps;
  const ttlMs = deps.ttlMs ?? 1000;
  const cache = <V>() =>
    createLoadingCache<V>({ ttlMs, max: 100_000, ...(deps.clock ? { now: deps.clock } : {}) });
  const envs = cache<Environment | null>();
  const preparsers = cache<PreparserRecord | null>();
  const devices = cache<DeviceRecord | null>();
  const definitions = cache<DefinitionRecord | null>();
  const settings = cache<DeviceSettings>();
  return {
    environment: (env) => envs.get(env, () => tenancy.getEnvironment(env)),
    preparser: (env) => preparsers.get(env, () => tenancy.getPreparser(env)),
    async devices(env, names) {
      const records = await readBatch(devices, env, names, async (missing) => {
        const got = await tenancy.getDevices(env, missing);
        return missing.map((_, i) => got[i] ?? null);
      });
      // Unknown devices are cached (as null) but not returned.
      for (const [name, record] of records) if (!record) records.delete(name);
      return records as Map<string, DeviceRecord>;
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
async function readBatch<V>(
  cache: LoadingCache<V>,
  env: string,
  names: readonly string[],
  load: (missing: string[]) => Promise<V[]>,
): Promise<Map<string, V>> {
  const found = new Map<string, V>();
  const missing: string[] = [];
  for (const name of new Set(names)) {
    const hit = cache.peek(`${env}\n${name}`);
    if (hit === undefined) missing.push(name);
    else found.set(name, hit);
  }
  if (missing.length > 0) {
    const loaded = await load(missing);
    missing.forEach((name, i) => {
      const value = loaded[i] as V;
      cache.set(`${env}\n${name}`, value);
      found.set(name, value);
    });
  }
  return found;
}
