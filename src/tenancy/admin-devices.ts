/**
 * Administration of devices and their per-device settings: threshold overrides and suppressed
 * data points. A device's definition and sensor names are checked before anything is written.
 *
 * A device record is written by one script that checks its revision (lua/put-device.lua), so two
 * administrators never overwrite each other silently: an update based on an older revision is
 * refused with CONFLICT. The same script claims the device's DevEUI (its `devEui` label, 16 hex
 * digits stored lowercase): a DevEUI another device holds is refused with DEV_EUI_TAKEN, and one a
 * device no longer has, or a deleted device had, is free again. What else a device has — its place in the environment's device list, the
 * label index, overrides of data points its new definition lacks — is written in steps that are safe
 * to repeat, around the record: the list and index first on creation (a reader checks each name
 * against its record, so a name without one is skipped), last on deletion.
 */
import { readFileSync } from 'node:fs';
import { AppError } from '../errors/app-error.ts';
import {
  DEV_EUI_LABEL,
  devEuiProblem,
  displayNameProblem,
  labelsProblem,
  normalDeviceLabels,
} from '../domain/identifiers.ts';
import { parseThresholdSet, type ThresholdInput } from '../domain/thresholds.ts';
import type { DataPointSpec } from '../domain/types.ts';
import { checkName, invalid, type AdminContext } from './admin-support.ts';
import { describeScope } from './admin-definition-versions.ts';
import {
  decodeDefinition,
  decodeDevice,
  decodeOverride,
  decodeOverrides,
  decodeSuppressed,
  encodeDevice,
  encodeOverride,
  pipelineValues,
  type StoredOverride,
} from './records.ts';
import { scopeOf } from './tenancy-store.ts';
import type { DefinitionRecord, DeviceRecord } from './types.ts';

const PUT_DEVICE = readFileSync(new URL('./lua/put-device.lua', import.meta.url), 'utf8');
const RELEASE_DEV_EUI = readFileSync(new URL('./lua/release-dev-eui.lua', import.meta.url), 'utf8');

export interface DeviceInput {
  name: string;
  definitionName: string;
  definitionIsPublic: boolean;
  displayName?: string;
  availabilityMinutes?: number;
  labels?: Readonly<Record<string, string>>;
}

export interface DeviceChanges {
  displayName?: string;
  definitionName?: string;
  definitionIsPublic?: boolean;
  /** null = inherit from the definition again. */
  availabilityMinutes?: number | null;
  /** The whole label set (replaces the device's). */
  labels?: Readonly<Record<string, string>>;
  /** The revision the change is based on: CONFLICT when the device has another. Absent: last writer wins. */
  revision?: number;
}

/** What setting an override did: the override before (null: none), after, and whether it changed. */
export interface ThresholdWrite {
  before: StoredOverride | null;
  after: StoredOverride;
  changed: boolean;
}

/** A device's rules as administrators see them: its definition, overrides and suppressions. */
export interface DeviceRules {
  device: DeviceRecord;
  definition: DefinitionRecord;
  overrides: Map<string, StoredOverride>;
  /** Sensor → suppressed until, epoch ms (0: until unsuppressed), as stored (an ended one too). */
  suppressed: Map<string, number>;
}

/** What writing a device record expects of the one stored (put-device.lua's ARGV[1]). */
type Expectation = { kind: 'absent' } | { kind: 'present'; revision?: number } | { kind: 'any' };

export function createDeviceAdmin(ctx: AdminContext) {
  const { redis, keys } = ctx;

  async function requireDefinition(env: string, name: string, isPublic: boolean): Promise<DefinitionRecord> {
    const scope = scopeOf(env, isPublic);
    const s = isPublic ? ({ isPublic: true } as const) : ({ isPublic: false, env } as const);
    const def = decodeDefinition(s, await redis.hgetall(keys.definition(scope, name)));
    if (!def) {
      const hint = isPublic ? '' : ' (add --public-definition for a public one)';
      throw new AppError('DEFINITION_NOT_FOUND', `no definition ${name} (${describeScope(scope)})${hint}`, {
        details: { definitionName: name },
      });
    }
    return def;
  }

  async function findDevice(env: string, name: string): Promise<DeviceRecord | null> {
    return decodeDevice(env, name, await redis.hgetall(keys.device(env, name)));
  }

  async function requireDevice(env: string, name: string): Promise<DeviceRecord> {
    await ctx.requireEnv(env);
    const device = await findDevice(env, name);
    if (!device)
      throw new AppError('DEVICE_NOT_FOUND', `no device ${name} in ${env}`, {
        details: { deviceName: name },
      });
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
        { details: { deviceName, sensorName: sensor } },
      );
    }
    return point;
  }

  /** The device input's problems that need no Redis: INVALID_INPUT with the first. */
  function checkInput(input: DeviceInput): void {
    checkName('device', input.name);
    checkFields(input);
  }

  function checkFields(fields: {
    displayName?: string | undefined;
    availabilityMinutes?: number | null | undefined;
    labels?: Readonly<Record<string, string>> | undefined;
  }): void {
    const problem =
      (fields.displayName === undefined ? undefined : displayNameProblem(fields.displayName)) ??
      (fields.labels === undefined ? undefined : labelsProblem(fields.labels));
    if (problem !== undefined) throw invalid(problem);
    const labels = fields.labels;
    const euiProblem =
      labels !== undefined && Object.hasOwn(labels, DEV_EUI_LABEL)
        ? devEuiProblem(labels[DEV_EUI_LABEL])
        : undefined;
    if (euiProblem !== undefined)
      throw new AppError('INVALID_INPUT', euiProblem, { details: { label: DEV_EUI_LABEL } });
    const minutes = fields.availabilityMinutes;
    if (minutes !== undefined && minutes !== null && !(Number.isFinite(minutes) && minutes > 0)) {
      throw invalid(`availability minutes must be a positive number, not ${String(minutes)}`);
    }
  }
  /** DEV_EUI_TAKEN when another device than `deviceName` holds `eui` (undefined: none wanted). */
  async function refuseTakenDevEui(env: string, deviceName: string, eui: string | undefined) {
    if (eui === undefined) return;
    const holder = await redis.hget(keys.devEuis(env), eui);
    if (holder !== null && holder !== deviceName) throw devEuiTaken(eui, holder);
  }

  /**
   * Writes `record` if the stored one meets `expect`, claiming its DevEUI; returns it with its new
   * revision. Before: the device list and label index gain it, and a new device is marked never
   * heard from (a DevEUI held by another device is refused before that; the script refuses a
   * race). After: the index loses `previous`'s labels that it no longer has, and overrides and
   * suppressions of data points `def` does not have are dropped.
   */
  async function writeDevice(
    record: DeviceRecord,
    def: DefinitionRecord,
    expect: Expectation,
    previous: DeviceRecord | null,
  ): Promise<DeviceRecord> {
    const { env, deviceName } = record;
    const eui = record.labels[DEV_EUI_LABEL];
    await refuseTakenDevEui(env, deviceName, eui);
    const before = redis.pipeline().zadd(keys.devices(env), 0, deviceName);
    for (const [k, v] of Object.entries(record.labels))
      before.zadd(keys.labelIndex(env, k), 0, `${v}\n${deviceName}`);
    if (previous === null) ctx.dependents.createDevices(before, env, [deviceName]);
    await before.exec();
    const fields = Object.entries(encodeDevice(record)).flat();
    const [written, revision, holder] = (await redis.eval(
      PUT_DEVICE,
      2,
      keys.device(env, deviceName),
      keys.devEuis(env),
      expectationArg(expect),
      deviceName,
      eui ?? '',
      ...fields,
    )) as [number, number, string?];
    if (written === 2) {
      if (previous === null) await dropUnwritten(ctx, record);
      throw devEuiTaken(eui ?? '', holder ?? '');
    }
    if (written !== 1) throw refused(expect, deviceName, revision);
    await tidyAfterWrite(record, def, previous);
    return { ...record, revision };
  }

  async function tidyAfterWrite(record: DeviceRecord, def: DefinitionRecord, previous: DeviceRecord | null) {
    const { env, deviceName } = record;
    const names = new Set(def.spec.dataPoints.map((p) => p.name));
    const [overridden, suppressed] = await Promise.all([
      redis.hkeys(keys.deviceThresholds(env, deviceName)),
      redis.hkeys(keys.deviceSuppressed(env, deviceName)),
    ]);
    const after = redis.pipeline();
    for (const [k, v] of Object.entries(previous?.labels ?? {})) {
      if (record.labels[k] !== v) after.zrem(keys.labelIndex(env, k), `${v}\n${deviceName}`);
    }
    const staleOverrides = overridden.filter((s) => !names.has(s));
    const staleSuppressed = suppressed.filter((s) => !names.has(s));
    if (staleOverrides.length > 0) after.hdel(keys.deviceThresholds(env, deviceName), ...staleOverrides);
    if (staleSuppressed.length > 0) after.hdel(keys.deviceSuppressed(env, deviceName), ...staleSuppressed);
    // Workers keep what they read of devices until the environment's catalog epoch moves.
    after.hincrby(keys.catalogEpochs(), env, 1);
    await after.exec();
  }

  /** The device `changes` make of `device`, checked. */
  function applyChanges(device: DeviceRecord, changes: DeviceChanges): DeviceRecord {
    checkFields(changes);
    const { availabilityMinutes: _old, ...rest } = device;
    const minutes =
      changes.availabilityMinutes === undefined
        ? device.availabilityMinutes
        : (changes.availabilityMinutes ?? undefined);
    return {
      ...rest,
      displayName: changes.displayName ?? device.displayName,
      definitionName: changes.definitionName ?? device.definitionName,
      definitionIsPublic: changes.definitionIsPublic ?? device.definitionIsPublic,
      ...(minutes === undefined ? {} : { availabilityMinutes: minutes }),
      labels: changes.labels === undefined ? device.labels : normalDeviceLabels(changes.labels),
    };
  }

  /**
   * Sets a device override of one data point (input as setThreshold takes it). `revision`: the
   * override's revision the change is based on (0: that there is none), CONFLICT when it has
   * another; absent, the last writer wins. An override equal to the stored one writes nothing and
   * keeps its revision; any other change counts one up.
   */
  async function putThreshold(
    env: string,
    device: string,
    sensor: string,
    input: unknown,
    revision?: number,
  ): Promise<ThresholdWrite> {
    const point = await requireSensor(env, device, sensor);
    const set = parseThresholdSet(toThresholdInput(input), point.dataType);
    const key = keys.deviceThresholds(env, device);
    let write: ThresholdWrite | undefined;
    await ctx.atomically(
      [key],
      async () => {
        const stored = await redis.hget(key, sensor);
        const before = stored === null ? null : decodeOverride(stored);
        const current = before?.revision ?? 0;
        if (revision !== undefined && revision !== current)
          throw overrideConflict(device, sensor, revision, current);
        write =
          before !== null && JSON.stringify(before.set) === JSON.stringify(set)
            ? { before, after: before, changed: false }
            : { before, after: { set, revision: current + 1 }, changed: true };
      },
      (m) => {
        if (!write?.changed) return;
        m.hset(key, sensor, encodeOverride(write.after.set, write.after.revision));
        m.hincrby(keys.catalogEpochs(), env, 1);
      },
    );
    if (!write) throw new Error('the override was not read');
    return write;
  }

  return {
    /** Creates a device; ALREADY_EXISTS for a duplicate name. */
    async createDevice(env: string, input: DeviceInput): Promise<DeviceRecord> {
      checkInput(input);
      await ctx.requireEnv(env);
      const def = await requireDefinition(env, input.definitionName, input.definitionIsPublic);
      // Refused before the device list and label index are touched (the script refuses a race).
      if (await redis.exists(keys.device(env, input.name))) throw refused({ kind: 'absent' }, input.name, 1);
      return writeDevice(recordOf(env, input, ctx.nowUTC()), def, { kind: 'absent' }, null);
    },
    /** Provisioning: creates or updates a device; true when something changed. */
    async putDevice(env: string, input: DeviceInput): Promise<boolean> {
      checkInput(input);
      await ctx.requireEnv(env);
      const def = await requireDefinition(env, input.definitionName, input.definitionIsPublic);
      const current = await findDevice(env, input.name);
      const labels = input.labels ?? current?.labels ?? {};
      const wanted = recordOf(env, { ...input, labels }, current?.createdUTC ?? ctx.nowUTC());
      if (current && sameDevice(current, wanted)) return false;
      await writeDevice(wanted, def, { kind: 'any' }, current);
      return true;
    },
    /** Applies `changes`; CONFLICT when `changes.revision` is not the stored one. */
    async updateDevice(env: string, name: string, changes: DeviceChanges): Promise<DeviceRecord> {
      const device = await requireDevice(env, name);
      if (changes.revision !== undefined && changes.revision !== device.revision)
        throw refused({ kind: 'present', revision: changes.revision }, name, device.revision);
      const next = applyChanges(device, changes);
      const def = await requireDefinition(env, next.definitionName, next.definitionIsPublic);
      return writeDevice(next, def, { kind: 'present', revision: device.revision }, device);
    },
    /**
     * Deletes a device with its state, alarms, events (from the listings), overrides and
     * availability deadline; its history stays in InfluxDB. Returns the record deleted.
     */
    async deleteDevice(env: string, name: string): Promise<DeviceRecord> {
      const device = await requireDevice(env, name);
      const m = redis
        .multi()
        .eval(RELEASE_DEV_EUI, 2, keys.device(env, name), keys.devEuis(env), name)
        .del(keys.device(env, name), keys.deviceThresholds(env, name), keys.deviceSuppressed(env, name));
      ctx.dependents.deleteDevice(m, env, name);
      m.hincrby(keys.catalogEpochs(), env, 1);
      await m.exec();
      const after = redis.pipeline().zrem(keys.devices(env), name);
      for (const [k, v] of Object.entries(device.labels))
        after.zrem(keys.labelIndex(env, k), `${v}\n${name}`);
      await after.exec();
      return device;
    },
    requireDevice,
    findDevice,
    requireDefinition,

    /** The device with its definition, threshold overrides (with their revisions) and suppressions. */
    async readDeviceRules(env: string, name: string): Promise<DeviceRules> {
      const device = await requireDevice(env, name);
      const definition = await requireDefinition(env, device.definitionName, device.definitionIsPublic);
      const [overrides, suppressed] = pipelineValues<Record<string, string>>(
        await redis
          .multi()
          .hgetall(keys.deviceThresholds(env, name))
          .hgetall(keys.deviceSuppressed(env, name))
          .exec(),
      );
      return {
        device,
        definition,
        overrides: decodeOverrides(overrides),
        suppressed: decodeSuppressed(suppressed),
      };
    },

    /**
     * Sets a device override of one data point's rules, hysteresis and stale rule, given as a rule
     * list or `{rules, hysteresis, stale}` and validated against the data point's type; true when it
     * changed. See putThreshold.
     */
    async setThreshold(env: string, device: string, sensor: string, input: unknown): Promise<boolean> {
      return (await putThreshold(env, device, sensor, input)).changed;
    },
    putThreshold,
    /**
     * Removes one override (or all of the device's when `sensor` is undefined); answers the
     * overrides removed, by sensor (none when there was none).
     */
    async clearThreshold(env: string, device: string, sensor?: string): Promise<Map<string, StoredOverride>> {
      const key = keys.deviceThresholds(env, device);
      if (sensor === undefined) {
        await requireDevice(env, device);
        const [all] = pipelineValues<Record<string, string>>(
          await redis.multi().hgetall(key).del(key).hincrby(keys.catalogEpochs(), env, 1).exec(),
        );
        return decodeOverrides(all);
      }
      await requireSensor(env, device, sensor);
      const [json] = pipelineValues<string | null>(
        await redis.multi().hget(key, sensor).hdel(key, sensor).hincrby(keys.catalogEpochs(), env, 1).exec(),
      );
      return typeof json === 'string' ? new Map([[sensor, decodeOverride(json)]]) : new Map();
    },
    /**
     * Suppresses events of a data point until `untilMs` (0 = until unsuppressed); answers the
     * suppression it replaced (its until, 0 = none; null when there was none).
     */
    async suppress(env: string, device: string, sensor: string, untilMs: number): Promise<number | null> {
      await requireSensor(env, device, sensor);
      if (untilMs !== 0 && untilMs <= ctx.clock())
        throw invalid('the end of a suppression must be in the future');
      const key = keys.deviceSuppressed(env, device);
      const [previous] = pipelineValues<string | null>(
        await redis
          .multi()
          .hget(key, sensor)
          .hset(key, sensor, String(untilMs))
          .hincrby(keys.catalogEpochs(), env, 1)
          .exec(),
      );
      return typeof previous === 'string' ? Number(previous) || 0 : null;
    },
    /** Ends a suppression; answers it (its until, 0 = none), null when there was none. */
    async unsuppress(env: string, device: string, sensor: string): Promise<number | null> {
      await requireSensor(env, device, sensor);
      const key = keys.deviceSuppressed(env, device);
      const [previous] = pipelineValues<string | null>(
        await redis.multi().hget(key, sensor).hdel(key, sensor).hincrby(keys.catalogEpochs(), env, 1).exec(),
      );
      return typeof previous === 'string' ? Number(previous) || 0 : null;
    },
  };
}

export type DeviceAdmin = ReturnType<typeof createDeviceAdmin>;

/** The record `input` describes (its revision filled in by the write). */
export function recordOf(env: string, input: DeviceInput, createdUTC: string): DeviceRecord {
  return {
    env,
    deviceName: input.name,
    displayName: input.displayName ?? input.name,
    definitionName: input.definitionName,
    definitionIsPublic: input.definitionIsPublic,
    ...(input.availabilityMinutes === undefined ? {} : { availabilityMinutes: input.availabilityMinutes }),
    labels: normalDeviceLabels(input.labels ?? {}),
    revision: 0,
    createdUTC,
  };
}

/** Whether two records describe the same device (revision and creation time aside). */
export function sameDevice(a: DeviceRecord, b: DeviceRecord): boolean {
  const { revision: _ra, createdUTC: _ca, ...x } = a;
  const { revision: _rb, createdUTC: _cb, ...y } = b;
  return JSON.stringify(x, sortedKeys) === JSON.stringify(y, sortedKeys);
}

/** A JSON.stringify replacer that writes objects' keys in order, so equal records compare equal. */
function sortedKeys(_key: string, value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

const expectationArg = (e: Expectation): string =>
  e.kind === 'absent' ? '0' : e.kind === 'any' ? '' : e.revision === undefined ? '*' : String(e.revision);

function overrideConflict(device: string, sensor: string, expected: number, current: number): AppError {
  const now = current === 0 ? 'has no override' : `override is at revision ${current}`;
  return new AppError(
    'CONFLICT',
    `${device}/${sensor} ${now}, not ${expected}: it changed since it was read; read it again and repeat the change`,
    { details: { deviceName: device, sensorName: sensor, revision: current } },
  );
}

/**
 * Takes a new device whose record was refused (its DevEUI taken meanwhile) out of the device list,
 * the label index and what depends on it, which gained it before the write — unless its record
 * exists by now (another creation of that name came first), checked in one transaction.
 */
export async function dropUnwritten(ctx: AdminContext, record: DeviceRecord): Promise<void> {
  const { keys } = ctx;
  const { env, deviceName } = record;
  let absent = false;
  await ctx.atomically(
    [keys.device(env, deviceName)],
    async () => {
      absent = (await ctx.redis.exists(keys.device(env, deviceName))) === 0;
    },
    (m) => {
      if (!absent) return;
      m.zrem(keys.devices(env), deviceName);
      for (const [k, v] of Object.entries(record.labels))
        m.zrem(keys.labelIndex(env, k), `${v}\n${deviceName}`);
      ctx.dependents.deleteDevice(m, env, deviceName);
    },
  );
}

/** DEV_EUI_TAKEN: `holder` has the DevEUI `eui` already. */
export function devEuiTaken(eui: string, holder: string): AppError {
  return new AppError(
    'DEV_EUI_TAKEN',
    `DevEUI ${eui} is the ${DEV_EUI_LABEL} of device ${holder} already: change or remove it there first`,
    { details: { devEui: eui, deviceName: holder } },
  );
}

/** Why put-device.lua refused a write that expected `expect`, the record being at `revision` (0: none). */
function refused(expect: Expectation, deviceName: string, revision: number): AppError {
  if (revision === 0)
    return new AppError('DEVICE_NOT_FOUND', `no device ${deviceName}`, { details: { deviceName } });
  if (expect.kind === 'absent')
    return new AppError('ALREADY_EXISTS', `device ${deviceName} exists already`, { details: { deviceName } });
  return new AppError(
    'CONFLICT',
    `device ${deviceName} is at revision ${revision}, not ${String(expect.kind === 'present' ? expect.revision : '')}: it changed since it was read; read it again and repeat the change`,
    { details: { deviceName, revision } },
  );
}

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
