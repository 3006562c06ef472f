/**
 * Step 2: match readings to devices and their definitions. Unknown devices are logged
 * (UNKNOWN_DEVICE) and dropped: Vigil stores nothing for devices that do not exist. A network
 * server's reading names its device by the server's device id, else by its DevEUI (the device whose
 * `devEui` label it is); a device neither finds is created when the message's API key may create
 * devices (network-devices.ts).
 */
import { nameProblem } from '../domain/identifiers.ts';
import type { ErrorCode } from '../errors/catalogue.ts';
import type { AutoDevices } from '../tenancy/auto-devices.ts';
import type { Catalog } from '../tenancy/catalog.ts';
import type { DefinitionRecord, DeviceRecord } from '../tenancy/types.ts';
import type { Failures } from './failures.ts';
import type { OutcomeLog } from './outcomes.ts';
import type { Reading, ResolvedReading } from './readings.ts';

export type { ResolvedReading } from './readings.ts';

/** How a network server's devices are found by DevEUI, and created for an API key that may. */
export interface NetworkDevices {
  /** The devices whose `devEui` label is one of `euis` (lowercase), by DevEUI. */
  byDevEui: Catalog['devicesByDevEui'];
  /** Creates the devices the API key may create, by device name. */
  create: AutoDevices['create'];
}

export async function resolveDevices(
  readings: Reading[],
  deps: {
    catalog: Catalog;
    outcomes: OutcomeLog;
    /** A reading whose resolution threw (the others go on). */
    failed: Failures['reading'];
    /** Finds and creates network servers' devices; without it they are found by name only. */
    network?: NetworkDevices;
  },
): Promise<ResolvedReading[]> {
  const { catalog, outcomes } = deps;
  const namesByEnv = new Map<string, string[]>();
  for (const r of readings) {
    if (r.network && nameProblem('device', r.deviceName) !== undefined) continue;
    const list = namesByEnv.get(r.item.env) ?? [];
    list.push(r.deviceName);
    namesByEnv.set(r.item.env, list);
  }
  const devicesByEnv = new Map(
    await Promise.all(
      [...namesByEnv].map(async ([env, names]) => [env, await catalog.devices(env, names)] as const),
    ),
  );
  const refused = await findNetworkDevices(readings, devicesByEnv, deps.network);
  // Each distinct definition once, before the loop: the loop below never awaits (an await per
  // reading lets the worker's other step loops run in between whenever a cache entry expired).
  // Device records are the catalog's cached objects, so a step's readings of one device share one.
  const definitionKey = (env: string, d: DeviceRecord) =>
    `${d.definitionIsPublic ? '' : env}\n${d.definitionName}\n${String(d.definitionIsPublic)}`;
  const keyOf = new Map<DeviceRecord, string>();
  const wanted = new Map<string, Promise<DefinitionRecord | null>>();
  for (const r of readings) {
    const d = devicesByEnv.get(r.item.env)?.get(r.deviceName);
    if (!d || keyOf.has(d)) continue;
    const key = definitionKey(r.item.env, d);
    keyOf.set(d, key);
    if (!wanted.has(key))
      wanted.set(key, catalog.definition(r.item.env, d.definitionName, d.definitionIsPublic));
  }
  const definitions = new Map(
    await Promise.all([...wanted].map(async ([key, p]) => [key, await p] as const)),
  );

  const resolved: ResolvedReading[] = [];
  for (const r of readings) {
    try {
      const refusal = refused.get(r);
      if (refusal) {
        outcomes.problem(r.item, refusal.code, refusal.message, r.deviceName);
        continue;
      }
      const found = resolveOne(
        r,
        devicesByEnv.get(r.item.env)?.get(r.deviceName),
        definitions,
        keyOf,
        outcomes,
      );
      if (found) resolved.push(found);
    } catch (err) {
      deps.failed(r, err);
    }
  }
  return resolved;
}

type Refusal = { code: ErrorCode; message: string };

/**
 * Finds the network servers' readings that their device id did not find: by DevEUI, then by
 * creating the device where the API key may. A reading found so takes its device's name; one that
 * stays unknown is refused with a code of its own (an invalid device id, a key over its cap…) or is
 * left to resolveOne's UNKNOWN_DEVICE. Adds what it finds to `devicesByEnv`.
 */
async function findNetworkDevices(
  readings: Reading[],
  devicesByEnv: Map<string, Map<string, DeviceRecord>>,
  network: NetworkDevices | undefined,
): Promise<Map<Reading, Refusal>> {
  const refused = new Map<Reading, Refusal>();
  const missing = readings.filter((r) => r.network && !devicesByEnv.get(r.item.env)?.has(r.deviceName));
  if (missing.length === 0) return refused;
  const euisByEnv = groupBy(
    missing.filter((r) => r.network!.devEui !== undefined),
    (r) => r.item.env,
    (r) => r.network!.devEui!,
  );
  const byEui = new Map(
    network
      ? await Promise.all(
          [...euisByEnv].map(async ([env, euis]) => [env, await network.byDevEui(env, euis)] as const),
        )
      : [],
  );
  const unknown: Reading[] = [];
  for (const r of missing) {
    const device = byEui.get(r.item.env)?.get(r.network!.devEui ?? '');
    if (device) adopt(r, device, devicesByEnv);
    else unknown.push(r);
  }
  await createNetworkDevices(unknown, devicesByEnv, network, refused);
  return refused;
}

/**
 * Creates the devices of the readings still unknown where their API key may, and adopts them; a
 * device id that is no valid name, or a creation refused, is recorded in `refused`.
 */
async function createNetworkDevices(
  unknown: Reading[],
  devicesByEnv: Map<string, Map<string, DeviceRecord>>,
  network: NetworkDevices | undefined,
  refused: Map<Reading, Refusal>,
): Promise<void> {
  const creatable = unknown.filter((r) => {
    if (nameProblem('device', r.deviceName) === undefined)
      return network !== undefined && r.item.keyId !== undefined && r.network!.devEui !== undefined;
    refused.set(r, {
      code: 'NETWORK_DEVICE_NAME_INVALID',
      message: `the network server's device id "${r.deviceName}" is not a valid device name, and no device has devEui ${r.network!.devEui ?? '(none given)'}`,
    });
    return false;
  });
  if (creatable.length === 0) return;
  const wanted = groupBy(
    creatable,
    (r) => `${r.item.env}\n${r.item.keyId!}`,
    (r) => ({ deviceName: r.deviceName, devEui: r.network!.devEui! }),
  );
  const created = new Map(
    await Promise.all(
      [...wanted].map(async ([envKey, list]) => {
        const [env, keyId] = envKey.split('\n') as [string, string];
        return [
          envKey,
          await network!.create(
            env,
            keyId,
            uniqueBy(list, (w) => w.deviceName),
          ),
        ] as const;
      }),
    ),
  );
  for (const r of creatable) {
    const outcome = created.get(`${r.item.env}\n${r.item.keyId!}`)?.get(r.deviceName);
    if (outcome === undefined) continue;
    if (outcome.kind === 'refused') refused.set(r, outcome);
    else adopt(r, outcome.device, devicesByEnv);
  }
}

/** The reading is of `device`: it takes the device's name from here on. */
function adopt(r: Reading, device: DeviceRecord, devicesByEnv: Map<string, Map<string, DeviceRecord>>): void {
  r.deviceName = device.deviceName;
  let devices = devicesByEnv.get(r.item.env);
  if (!devices) devicesByEnv.set(r.item.env, (devices = new Map<string, DeviceRecord>()));
  devices.set(device.deviceName, device);
}

function groupBy<T, V>(items: readonly T[], key: (t: T) => string, value: (t: T) => V): Map<string, V[]> {
  const out = new Map<string, V[]>();
  for (const item of items) {
    const k = key(item);
    const list = out.get(k);
    if (list) list.push(value(item));
    else out.set(k, [value(item)]);
  }
  return out;
}

function uniqueBy<T>(items: readonly T[], key: (t: T) => string): T[] {
  return [...new Map(items.map((item) => [key(item), item])).values()];
}

function resolveOne(
  r: Reading,
  device: DeviceRecord | undefined,
  definitions: ReadonlyMap<string, DefinitionRecord | null>,
  keyOf: ReadonlyMap<DeviceRecord, string>,
  outcomes: OutcomeLog,
): ResolvedReading | undefined {
  if (!device) {
    outcomes.problem(
      r.item,
      'UNKNOWN_DEVICE',
      `no device "${r.deviceName}" in this environment`,
      r.deviceName,
    );
    return undefined;
  }
  const definition = definitions.get(keyOf.get(device) ?? '') ?? null;
  if (!definition) {
    outcomes.problem(
      r.item,
      'DEFINITION_NOT_FOUND',
      `device "${r.deviceName}" uses definition "${device.definitionName}", which no longer exists`,
      r.deviceName,
    );
    return undefined;
  }
  outcomes.device(r.item, r.deviceName, definition.version);
  r.device = device;
  r.definition = definition;
  return r as ResolvedReading;
}
