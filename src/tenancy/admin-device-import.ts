/**
 * Writing many devices at once (an import, src/management/device-import.ts), in batches: each
 * batch one pipeline that adds the devices to the environment's list and label index (and the new
 * ones to those never heard from) and writes each record by the script that checks its revision
 * and claims its DevEUI (lua/put-device.lua, as one device's write does), then one that takes out
 * what the records no longer have (labels, overrides of data points a new definition lacks). The
 * inputs arrive checked; a record that changed since it was read, or whose DevEUI another device
 * took meanwhile, is left as it is and named in the answer.
 */
import { readFileSync } from 'node:fs';
import type { ChainableCommander } from 'ioredis';
import type { Redis } from '../redis/connect.ts';
import type { AdminContext } from './admin-support.ts';
import { dropUnwritten, recordOf, type DeviceInput } from './admin-devices.ts';
import { DEV_EUI_LABEL } from '../domain/identifiers.ts';
import { encodeDevice } from './records.ts';
import type { DeviceRecord } from './types.ts';

const PUT_DEVICE = readFileSync(new URL('./lua/put-device.lua', import.meta.url), 'utf8');

/** Devices written per pipeline. */
const BATCH = 2000;
/** Batches written at once. */
const IN_FLIGHT = 2;

type PutDevice = (
  record: string,
  claims: string,
  expected: string,
  name: string,
  devEui: string,
  ...fields: string[]
) => ChainableCommander;
type WithPutDevice = Redis & { vigilPutDevice?: unknown };

export interface ImportItem {
  input: DeviceInput;
  /** The device as it was read when the import was checked; null for a new one. */
  current: DeviceRecord | null;
}

/** A device the import did not write: it changed since it was read, or another device took its DevEUI. */
export interface ImportRefusal {
  deviceName: string;
  code: 'CONFLICT' | 'DEV_EUI_TAKEN';
  /** DEV_EUI_TAKEN: the device that holds the DevEUI. */
  holder?: string;
}

export function createDeviceImporter(ctx: AdminContext) {
  const { keys } = ctx;
  const redis = ctx.bulk as WithPutDevice;
  if (typeof redis.vigilPutDevice !== 'function')
    redis.defineCommand('vigilPutDevice', { numberOfKeys: 2, lua: PUT_DEVICE });

  async function writeBatch(
    env: string,
    items: ImportItem[],
    nowUTC: string,
    dataPointsOf: (d: DeviceRecord) => ReadonlySet<string>,
  ): Promise<ImportRefusal[]> {
    const records = items.map(({ input, current }) => recordOf(env, input, current?.createdUTC ?? nowUTC));
    const pipe = ctx.bulk.pipeline();
    pipe.zadd(keys.devices(env), ...records.flatMap((r) => [0, r.deviceName]));
    const byLabel = new Map<string, (string | number)[]>();
    for (const r of records)
      for (const [k, v] of Object.entries(r.labels)) {
        const members = byLabel.get(k) ?? [];
        if (members.length === 0) byLabel.set(k, members);
        members.push(0, `${v}\n${r.deviceName}`);
      }
    for (const [k, members] of byLabel) pipe.zadd(keys.labelIndex(env, k), ...members);
    const created = records.filter((_, i) => !items[i]?.current).map((r) => r.deviceName);
    if (created.length > 0) ctx.dependents.createDevices(pipe, env, created);
    const put = (pipe as unknown as { vigilPutDevice: PutDevice }).vigilPutDevice.bind(pipe);
    records.forEach((r, i) => {
      const current = items[i]?.current;
      put(
        keys.device(env, r.deviceName),
        keys.devEuis(env),
        current ? String(current.revision) : '0',
        r.deviceName,
        r.labels[DEV_EUI_LABEL] ?? '',
        ...Object.entries(encodeDevice(r)).flat(),
      );
    });
    const results = (await pipe.exec()) ?? [];
    // Workers keep what they read of devices until the environment's catalog epoch moves.
    await ctx.catalogChanged(env);
    const offset = 1 + byLabel.size + (created.length > 0 ? 1 : 0);
    const refusals: ImportRefusal[] = [];
    const written: { record: DeviceRecord; current: DeviceRecord | null }[] = [];
    const unwritten: DeviceRecord[] = [];
    records.forEach((record, i) => {
      const [err, reply] = results[offset + i] ?? [new Error('no reply'), null];
      if (err) throw err;
      const [status, , holder] = reply as [number, number, string?];
      const current = items[i]?.current ?? null;
      if (status === 1) written.push({ record, current });
      else if (status === 2) {
        refusals.push({ deviceName: record.deviceName, code: 'DEV_EUI_TAKEN', holder: holder ?? '' });
        if (current === null) unwritten.push(record);
      } else refusals.push({ deviceName: record.deviceName, code: 'CONFLICT' });
    });
    await tidy(env, written, dataPointsOf);
    for (const record of unwritten) await dropUnwritten(ctx, record);
    return refusals;
  }

  /** What the written records no longer have: labels they lost, overrides their new definition lacks. */
  async function tidy(
    env: string,
    written: { record: DeviceRecord; current: DeviceRecord | null }[],
    dataPointsOf: (d: DeviceRecord) => ReadonlySet<string>,
  ) {
    const pipe = ctx.bulk.pipeline();
    const moved = written.filter(
      ({ record, current }) =>
        current !== null &&
        (current.definitionName !== record.definitionName ||
          current.definitionIsPublic !== record.definitionIsPublic),
    );
    for (const { record, current } of written)
      for (const [k, v] of Object.entries(current?.labels ?? {}))
        if (record.labels[k] !== v) pipe.zrem(keys.labelIndex(env, k), `${v}\n${record.deviceName}`);
    if (pipe.length > 0) await pipe.exec();
    if (moved.length === 0) return;
    // A device moved to another definition keeps no override or suppression of a data point its new
    // definition lacks, as when one device is moved (admin-devices.ts).
    const read = ctx.bulk.pipeline();
    for (const { record } of moved)
      read
        .hkeys(keys.deviceThresholds(env, record.deviceName))
        .hkeys(keys.deviceSuppressed(env, record.deviceName));
    const fields = ((await read.exec()) ?? []).map(([err, v]) => {
      if (err) throw err;
      return v as string[];
    });
    const drop = ctx.bulk.pipeline();
    moved.forEach(({ record }, i) => {
      const kept = dataPointsOf(record);
      const stale = (names: string[] | undefined) => (names ?? []).filter((n) => !kept.has(n));
      const overrides = stale(fields[2 * i]);
      const suppressed = stale(fields[2 * i + 1]);
      if (overrides.length > 0) drop.hdel(keys.deviceThresholds(env, record.deviceName), ...overrides);
      if (suppressed.length > 0) drop.hdel(keys.deviceSuppressed(env, record.deviceName), ...suppressed);
    });
    if (drop.length > 0) await drop.exec();
  }

  return {
    /**
     * Writes the items; resolves to the devices not written: changed since they were read, or their
     * DevEUI taken meanwhile. `dataPointsOf` names the data points of a device's definition.
     */
    async importDevices(
      env: string,
      items: readonly ImportItem[],
      dataPointsOf: (d: DeviceRecord) => ReadonlySet<string>,
    ): Promise<ImportRefusal[]> {
      const nowUTC = ctx.nowUTC();
      const batches: Promise<ImportRefusal[]>[] = [];
      // Two batches in flight: the next one is built while Redis runs the one before.
      for (let i = 0; i < items.length; i += BATCH) {
        if (batches.length >= IN_FLIGHT) await batches[batches.length - IN_FLIGHT];
        const batch = writeBatch(env, items.slice(i, i + BATCH), nowUTC, dataPointsOf);
        // Awaited in turn below; a batch failing meanwhile is not an unhandled rejection.
        batch.catch(() => undefined);
        batches.push(batch);
      }
      return (await Promise.all(batches)).flat();
    },
  };
}

export type DeviceImporter = ReturnType<typeof createDeviceImporter>;
