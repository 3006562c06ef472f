/**
 * The worker's read-through cache of tenancy records (environments, pre-parsers, devices,
 * definitions, threshold overrides, suppressions). Entries live `ttlMs` (default 1 s), so a new
 * definition version, a device override or a suppression reaches every worker within a second,
 * without a restart, while a busy worker reads each record about once a second, not per payload.
 */
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

interface Entry<T> {
  value: T;
  expiresMs: number;
}

class TtlCache<T> {
  private readonly entries = new Map<string, Entry<T>>();
  private readonly ttlMs: number;
  private readonly maxEntries: number;
  constructor(ttlMs: number, maxEntries = 100_000) {
    this.ttlMs = ttlMs;
    this.maxEntries = maxEntries;
  }
  get(key: string, nowMs: number): T | undefined {
    const e = this.entries.get(key);
    if (!e) return undefined;
    if (e.expiresMs <= nowMs) {
      this.entries.delete(key);
      return undefined;
    }
    return e.value;
  }
  set(key: string, value: T, nowMs: number): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, expiresMs: nowMs + this.ttlMs });
  }
  async through(key: string, load: () => Promise<T>, nowMs: number): Promise<T> {
    const hit = this.get(key, nowMs);
    if (hit !== undefined) return hit;
    const value = await load();
    this.set(key, value, nowMs);
    return value;
  }
}

export function createCatalog(deps: {
  tenancy: TenancyStore;
  ttlMs?: number;
  clock?: () => number;
}): Catalog {
  const { tenancy } = deps;
  const ttlMs = deps.ttlMs ?? 1000;
  const now = deps.clock ?? Date.now;
  const envs = new TtlCache<Environment | null>(ttlMs);
  const preparsers = new TtlCache<PreparserRecord | null>(ttlMs);
  const devices = new TtlCache<DeviceRecord | null>(ttlMs);
  const definitions = new TtlCache<DefinitionRecord | null>(ttlMs);
  const overrides = new TtlCache<ThresholdOverrides>(ttlMs);
  const suppressions = new TtlCache<Record<string, number>>(ttlMs);
  return {
    environment: (env) => envs.through(env, () => tenancy.getEnvironment(env), now()),
    preparser: (env) => preparsers.through(env, () => tenancy.getPreparser(env), now()),
    async devices(env, names) {
      const t = now();
      const found = new Map<string, DeviceRecord>();
      const missing: string[] = [];
      for (const name of new Set(names)) {
        const hit = devices.get(`${env}\n${name}`, t);
        if (hit === undefined) missing.push(name);
        else if (hit) found.set(name, hit);
      }
      if (missing.length > 0) {
        const loaded = await tenancy.getDevices(env, missing);
        missing.forEach((name, i) => {
          const record = loaded[i] ?? null;
          devices.set(`${env}\n${name}`, record, t);
          if (record) found.set(name, record);
        });
      }
      return found;
    },
    definition: (env, name, isPublic) =>
      definitions.through(
        isPublic ? `public\n${name}` : `${env}\n${name}`,
        () => tenancy.getDefinition(env, name, isPublic),
        now(),
      ),
    thresholdOverrides: (env, device) =>
      overrides.through(`${env}\n${device}`, () => tenancy.getThresholdOverrides(env, device), now()),
    suppressed: (env, device) =>
      suppressions.through(`${env}\n${device}`, () => tenancy.getSuppressed(env, device), now()),
    async prefetchDeviceSettings(env, names) {
      const t = now();
      const missing = [...new Set(names)].filter(
        (name) =>
          overrides.get(`${env}\n${name}`, t) === undefined ||
          suppressions.get(`${env}\n${name}`, t) === undefined,
      );
      if (missing.length === 0) return;
      const loaded = await tenancy.getDeviceSettings(env, missing);
      missing.forEach((name, i) => {
        const settings = loaded[i];
        if (!settings) return;
        overrides.set(`${env}\n${name}`, settings.overrides, t);
        suppressions.set(`${env}\n${name}`, settings.suppressed, t);
      });
    },
  };
}
