/**
 * Step 2: match readings to devices and their definitions. Unknown devices are logged
 * (UNKNOWN_DEVICE) and dropped: Vigil stores nothing for devices that do not exist.
 */
import type { DefinitionRecord, DeviceRecord } from '../tenancy/types.ts';
import type { Catalog } from './catalog.ts';
import type { OutcomeLog } from './outcomes.ts';
import type { Reading } from './preparse.ts';

export interface ResolvedReading extends Reading {
  device: DeviceRecord;
  definition: DefinitionRecord;
}

export async function resolveDevices(
  readings: Reading[],
  deps: { catalog: Catalog; outcomes: OutcomeLog },
): Promise<ResolvedReading[]> {
  const { catalog, outcomes } = deps;
  const namesByEnv = new Map<string, string[]>();
  for (const r of readings) {
    const list = namesByEnv.get(r.item.env) ?? [];
    list.push(r.deviceName);
    namesByEnv.set(r.item.env, list);
  }
  const devicesByEnv = new Map<string, Map<string, DeviceRecord>>();
  for (const [env, names] of namesByEnv) devicesByEnv.set(env, await catalog.devices(env, names));

  const resolved: ResolvedReading[] = [];
  for (const r of readings) {
    const device = devicesByEnv.get(r.item.env)?.get(r.deviceName);
    if (!device) {
      outcomes.problem(
        r.item,
        'UNKNOWN_DEVICE',
        `no device "${r.deviceName}" in this environment`,
        r.deviceName,
      );
      continue;
    }
    const definition = await catalog.definition(r.item.env, device.definitionName, device.definitionIsPublic);
    if (!definition) {
      outcomes.problem(
        r.item,
        'DEFINITION_NOT_FOUND',
        `device "${r.deviceName}" uses definition "${device.definitionName}", which no longer exists`,
        r.deviceName,
      );
      continue;
    }
    outcomes.device(r.item, r.deviceName);
    resolved.push({ ...r, device, definition });
  }
  return resolved;
}
