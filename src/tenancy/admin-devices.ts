/**
 * Administration of devices and their per-device settings: threshold overrides and suppressed
 * data points. A device's definition and sensor names are checked before anything is written.
 */
import { AppError } from '../errors/app-error.ts';
import { displayNameProblem } from '../domain/identifiers.ts';
import { parseThresholdSet, type ThresholdInput } from '../domain/thresholds.ts';
import type { DataPointSpec } from '../domain/types.ts';
import { checkName, invalid, type AdminContext } from './admin-support.ts';
import { describeScope } from './admin-definitions.ts';
import { decodeDefinition, decodeDevice, encodeDevice } from './records.ts';
import { scopeOf } from './tenancy-store.ts';
import type { DefinitionRecord, DeviceRecord } from './types.ts';

export interface DeviceInput {
  name: string;
  definitionName: string;
  definitionIsPublic: boolean;
  displayName?: string;
  availabilityMinutes?: number;
}

export interface DeviceChanges {
  displayName?: string;
  definitionName?: string;
  definitionIsPublic?: boolean;
  /** null = inherit from the definition again. */
  availabilityMinutes?: number | null;
}

export function createDeviceAdmin(ctx: AdminContext) {
  const { redis, keys } = ctx;

  async function requireDefinition(env: string, name: string, isPublic: boolean): Promise<DefinitionRecord> {
    const scope = scopeOf(env, isPublic);
    const s = isPublic ? ({ isPublic: true } as const) : ({ isPublic: false, env } as const);
    const def = decodeDefinition(s, await redis.hgetall(keys.definition(scope, name)));
    if (!def) {
      const hint = isPublic ? '' : ' (add --public-definition for a public one)';
      throw new AppError('DEFINITION_NOT_FOUND', `no definition ${name} (${describeScope(scope)})${hint}`);
    }
    return def;
  }

  async function requireDevice(env: string, name: string): Promise<DeviceRecord> {
    await ctx.requireEnv(env);
    const device = decodeDevice(env, name, await redis.hgetall(keys.device(env, name)));
    if (!device) throw new AppError('DEVICE_NOT_FOUND', `no device ${name} in ${env}`);
    return device;
  }

  async function requireSensor(env: string, deviceName: string, sensor: string): Promise<DataPointSpec> {
    const device = await requireDevice(env, deviceName);
    const def = await requireDefinition(env, device.definitionName, device.definitionIsPublic);
    const point = def.spec.dataPoints.find((p) => p.name === sensor);
    if (!point) {
      const names = def.spec.dataPoints.map((p) => p.name).join(', ');
      throw new AppError(
        'SENSOR_NOT_FOUND',
        `definition ${def.spec.name} has no data point ${sensor} (it has: ${names})`,
      );
    }
    return point;
  }

  function checkDisplayName(displayName: string | undefined) {
    const problem = displayName === undefined ? undefined : displayNameProblem(displayName);
    if (problem !== undefined) throw invalid(problem);
  }

  function checkMinutes(minutes: number | undefined | null) {
    if (minutes !== undefined && minutes !== null && !(Number.isFinite(minutes) && minutes > 0)) {
      throw invalid(`availability minutes must be a positive number, not ${String(minutes)}`);
    }
  }

  async function validDevice(env: string, input: DeviceInput): Promise<DeviceRecord> {
    checkName('device', input.name);
    checkDisplayName(input.displayName);
    checkMinutes(input.availabilityMinutes);
    await ctx.requireEnv(env);
    await requireDefinition(env, input.definitionName, input.definitionIsPublic);
    return {
      env,
      deviceName: input.name,
      displayName: input.displayName ?? input.name,
      definitionName: input.definitionName,
      definitionIsPublic: input.definitionIsPublic,
      ...(input.availabilityMinutes === undefined ? {} : { availabilityMinutes: input.availabilityMinutes }),
      createdUTC: ctx.nowUTC(),
    };
  }

  /**
   * Writes a device record; overrides and suppressions of data points its definition does not have
   * (after a change of definition) are dropped in the same transaction.
   */
  async function writeDevice(record: DeviceRecord, def: DefinitionRecord) {
    const { env, deviceName } = record;
    const names = new Set(def.spec.dataPoints.map((p) => p.name));
    const [overridden, suppressed] = await Promise.all([
      redis.hkeys(keys.deviceThresholds(env, deviceName)),
      redis.hkeys(keys.deviceSuppressed(env, deviceName)),
    ]);
    const m = redis
      .multi()
      .zadd(keys.devices(env), 0, deviceName)
      .del(keys.device(env, deviceName))
      .hset(keys.device(env, deviceName), encodeDevice(record));
    const staleOverrides = overridden.filter((s) => !names.has(s));
    const staleSuppressed = suppressed.filter((s) => !names.has(s));
    if (staleOverrides.length > 0) m.hdel(keys.deviceThresholds(env, deviceName), ...staleOverrides);
    if (staleSuppressed.length > 0) m.hdel(keys.deviceSuppressed(env, deviceName), ...staleSuppressed);
    await m.exec();
  }

  return {
    /** Creates a device; ALREADY_EXISTS for a duplicate name. */
    async createDevice(env: string, input: DeviceInput): Promise<DeviceRecord> {
      const record = await validDevice(env, input);
      const key = keys.device(env, input.name);
      await ctx.atomically(
        [key],
        async () => {
          if (await redis.exists(key))
            throw new AppError('ALREADY_EXISTS', `device ${input.name} exists already in ${env}`);
        },
        (m) => m.zadd(keys.devices(env), 0, input.name).hset(key, encodeDevice(record)),
      );
      return record;
    },
    /** Provisioning: creates or updates a device; true when something changed. */
    async putDevice(env: string, input: DeviceInput): Promise<boolean> {
      const wanted = await validDevice(env, input);
      const current = decodeDevice(env, input.name, await redis.hgetall(keys.device(env, input.name)));
      const { createdUTC: _a, ...a } = wanted;
      const { createdUTC, ...b } = current ?? { createdUTC: wanted.createdUTC };
      if (current && JSON.stringify(a) === JSON.stringify(b)) return false;
      const def = await requireDefinition(env, wanted.definitionName, wanted.definitionIsPublic);
      await writeDevice({ ...wanted, createdUTC }, def);
      return true;
    },
    async updateDevice(env: string, name: string, changes: DeviceChanges): Promise<DeviceRecord> {
      checkDisplayName(changes.displayName);
      const device = await requireDevice(env, name);
      checkMinutes(changes.availabilityMinutes);
      const { availabilityMinutes: _old, ...rest } = device;
      const minutes =
        changes.availabilityMinutes === undefined
          ? device.availabilityMinutes
          : (changes.availabilityMinutes ?? undefined);
      const next: DeviceRecord = {
        ...rest,
        displayName: changes.displayName ?? device.displayName,
        definitionName: changes.definitionName ?? device.definitionName,
        definitionIsPublic: changes.definitionIsPublic ?? device.definitionIsPublic,
        ...(minutes === undefined ? {} : { availabilityMinutes: minutes }),
      };
      await writeDevice(next, await requireDefinition(env, next.definitionName, next.definitionIsPublic));
      return next;
    },
    /** Deletes a device with its state, events, overrides and availability deadline. */
    async deleteDevice(env: string, name: string) {
      await requireDevice(env, name);
      const m = redis
        .multi()
        .zrem(keys.devices(env), name)
        .del(keys.device(env, name), keys.deviceThresholds(env, name), keys.deviceSuppressed(env, name));
      ctx.dependents.deleteDevice(m, env, name);
      await m.exec();
    },
    requireDevice,

    /**
     * Sets a device override of one data point's rules and hysteresis, given as a rule list or
     * `{rules, hysteresis}` and validated against the data point's type; true when it changed.
     */
    async setThreshold(env: string, device: string, sensor: string, input: unknown): Promise<boolean> {
      const point = await requireSensor(env, device, sensor);
      const set = parseThresholdSet(toThresholdInput(input), point.dataType);
      const json = JSON.stringify(set);
      if ((await redis.hget(keys.deviceThresholds(env, device), sensor)) === json) return false;
      await redis.hset(keys.deviceThresholds(env, device), sensor, json);
      return true;
    },
    /** Removes one override (or all of the device's when `sensor` is undefined). */
    async clearThreshold(env: string, device: string, sensor?: string) {
      if (sensor === undefined) {
        await requireDevice(env, device);
        await redis.del(keys.deviceThresholds(env, device));
      } else {
        await requireSensor(env, device, sensor);
        await redis.hdel(keys.deviceThresholds(env, device), sensor);
      }
    },
    /** Suppresses events of a data point until `untilMs` (0 = until unsuppressed). */
    async suppress(env: string, device: string, sensor: string, untilMs: number) {
      await requireSensor(env, device, sensor);
      if (untilMs !== 0 && untilMs <= ctx.clock()) throw invalid('--until must be in the future');
      await redis.hset(keys.deviceSuppressed(env, device), sensor, String(untilMs));
    },
    async unsuppress(env: string, device: string, sensor: string) {
      await requireSensor(env, device, sensor);
      await redis.hdel(keys.deviceSuppressed(env, device), sensor);
    },
  };
}

export type DeviceAdmin = ReturnType<typeof createDeviceAdmin>;

/** A rule list or `{rules, hysteresis}` as the domain's threshold parser wants it. */
export function toThresholdInput(input: unknown): ThresholdInput {
  if (Array.isArray(input)) return { rules: input };
  if (typeof input === 'object' && input !== null) {
    const { rules, hysteresis, stale, ...extra } = input as Record<string, unknown>;
    const unknown = Object.keys(extra);
    if (unknown.length > 0)
      throw invalid(
        `invalid thresholds: unknown field ${unknown.join(', ')} (expected rules, hysteresis, stale)`,
      );
    return { rules, hysteresis, stale };
  }
  throw invalid(
    'invalid thresholds: expected a rule list or {"rules": [...], "hysteresis": n, "stale": {"after": "30m", "status": "WARNING"}}',
  );
}
