/**
 * The worker's read-through cache of tenancy records (environments, pre-parsers, devices,
 * definitions, threshold overrides, suppressions). Entries live `ttlMs` (default 1 s), so a new
 * definition version, a device override or a suppression reaches every worker within a second,
 * without a restart, while a busy worker reads each record about once a second, not per payload.
 */
import { createTtlCache } from '../ingest/ttl-cache.ts';
import type { TenancyStore } from '../tenancy/tenancy-store.ts';
import type {
  DefinitionRecord,
  DeviceRecord,
  Environment,
  PreparserRecord,
  ThresholdOverrides,
} from '../tenancy/types.ts';

export interface Catalog {
  environment(env: string): Promise<Environment | null>;
  preparser(env: string): Promise<PreparserRecord | null>;
  /** Devices by name, one pipelined read for the names not cached. */
  devices(env: string, names: string[]): Promise<Map<string, DeviceRecord>>;
  definition(env: string, name: string, isPublic: boolean): Promise<DefinitionRecord | null>;
  thresholdOverrides(env: string, device: string): Promise<ThresholdOverrides>;
  suppressed(env: string, device: string): Promise<Record<string, number>>;
  /**
   * Loads the threshold overrides and suppressions of the devices not cached, in one pipelined
   * read, so a job's per-device lookups that follow are cache hits (not one round trip each).
   */
  prefetchDeviceSettings(env: string, devices: string[]): Promise<void>;
}

export function createCatalog(deps: {
  tenancy: TenancyStore;
  ttlMs?: number;
  clock?: () => number;
}): Catalog {
  const { tenancy } = deps;
  const ttlMs = deps.ttlMs ?? 1000;
  const cache = <V>() =>
    createTtlCache<V>({ ttlMs, maxEntries: 100_000, ...(deps.clock ? { now: deps.clock } : {}) });
  const envs = cache<Environment | null>();
  const preparsers = cache<PreparserRecord | null>();
  const devices = cache<DeviceRecord | null>();
  const definitions = cache<DefinitionRecord | null>();
  const overrides = cache<ThresholdOverrides>();
  const suppressions = cache<Record<string, number>>();
  return {
    environment: (env) => envs.get(env, () => tenancy.getEnvironment(env)),
    preparser: (env) => preparsers.get(env, () => tenancy.getPreparser(env)),
    async devices(env, names) {
      const found = new Map<string, DeviceRecord>();
      const missing: string[] = [];
      for (const name of new Set(names)) {
        const hit = devices.peek(`${env}\n${name}`);
        if (hit === undefined) missing.push(name);
        else if (hit) found.set(name, hit);
      }
      if (missing.length > 0) {
        // One pipelined read for every device of the job that is not cached.
        const loaded = await tenancy.getDevices(env, missing);
        missing.forEach((name, i) => {
          const record = loaded[i] ?? null;
          devices.set(`${env}\n${name}`, record);
          if (record) found.set(name, record);
        });
      }
      return found;
    },
    definition: (env, name, isPublic) =>
      definitions.get(isPublic ? `public\n${name}` : `${env}\n${name}`, () =>
        tenancy.getDefinition(env, name, isPublic),
      ),
    thresholdOverrides: (env, device) =>
      overrides.get(`${env}\n${device}`, () => tenancy.getThresholdOverrides(env, device)),
    suppressed: (env, device) =>
      suppressions.get(`${env}\n${device}`, () => tenancy.getSuppressed(env, device)),
    async prefetchDeviceSettings(env, names) {
      const missing = [...new Set(names)].filter(
        (name) =>
          overrides.peek(`${env}\n${name}`) === undefined ||
          suppressions.peek(`${env}\n${name}`) === undefined,
      );
      if (missing.length === 0) return;
      const loaded = await tenancy.getDeviceSettings(env, missing);
      missing.forEach((name, i) => {
        const settings = loaded[i];
        if (!settings) return;
        overrides.set(`${env}\n${name}`, settings.overrides);
        suppressions.set(`${env}\n${name}`, settings.suppressed);
      });
    },
  };
}
