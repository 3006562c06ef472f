/**
 * Step 2: match readings to devices and their definitions. Unknown devices are logged
 * (UNKNOWN_DEVICE) and dropped: Vigil stores nothing for devices that do not exist.
 */
import type { DefinitionRecord, DeviceRecord } from '../tenancy/types.ts';
import type { Catalog } from '../tenancy/catalog.ts';
import type { Failures } from './failures.ts';
import type { OutcomeLog } from './outcomes.ts';
import type { Reading, ResolvedReading } from './readings.ts';

export type { ResolvedReading } from './readings.ts';

export async function resolveDevices(
  readings: Reading[],
  deps: {
    catalog: Catalog;
    outcomes: OutcomeLog;
    /** A reading whose resolution threw (the others go on). */
    failed: Failures['reading'];
  },
): Promise<ResolvedReading[]> {
  const { catalog, outcomes } = deps;
  const namesByEnv = new Map<string, string[]>();
  for (const r of readings) {
    const list = namesByEnv.get(r.item.env) ?? [];
    list.push(r.deviceName);
    namesByEnv.set(r.item.env, list);
  }
  const devicesByEnv = new Map(
    await Promise.all(
      [...namesByEnv].map(async ([env, names]) => [env, await catalog.devices(env, names)] as const),
    ),
  );
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
