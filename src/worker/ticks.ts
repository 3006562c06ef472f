/**
 * Timer ticks in a step: the scheduler queues one into a device's partition when the device's timer
 * comes due (a rule that waits, `for`, or a stale rule: docs/processing.md#conditions-that-wait).
 * The step's owner applies it under its lease, in the same state call as the device's payloads of
 * the step if any: the state script applies what is due by the step's time to every data point of
 * the device that keeps timers, and sets the device's next timer. A tick is no submission: it has
 * no ingestion-log entry, no recent payload, no contact.
 */
import { TIMER_GATEWAY, type IngestItem } from '../domain/ingest-item.ts';
import type { Catalog } from '../tenancy/catalog.ts';
import type { DefinitionRecord, DeviceRecord } from '../tenancy/types.ts';
import type { ConvertedDevice } from './convert.ts';
import { timerPoints } from './convert.ts';

/** The step's items apart: submissions, and the devices whose timers came due. */
export function splitTicks(items: readonly IngestItem[]): { payloads: IngestItem[]; ticks: IngestItem[] } {
  const payloads: IngestItem[] = [];
  const ticks: IngestItem[] = [];
  for (const item of items) (item.gateway === TIMER_GATEWAY ? ticks : payloads).push(item);
  return { payloads, ticks };
}

/**
 * Adds the ticks to the step's converted devices: a device with payloads in the step gets its tick
 * and the rule metadata of all its data points with timers; one without gets an entry of its own,
 * without values and without contact. Ticks of devices deleted since are dropped (their timers went
 * with them).
 */
export async function addTicks(
  devices: ConvertedDevice[],
  ticks: readonly IngestItem[],
  deps: { catalog: Catalog; nowMs: number },
): Promise<void> {
  const present = new Map(devices.map((d) => [`${d.env}\n${d.device}`, d]));
  // Everything read up front: the loop below never awaits (an await per device lets the worker's
  // other step loops run in between, and a crowd of ticks then takes seconds).
  for (const { env, name, record, definition, settings, locale } of await readTicked(ticks, deps.catalog)) {
    if (!record || !definition) continue;
    const sensors = timerPoints(definition.spec, { locale, settings, nowMs: deps.nowMs });
    const device = present.get(`${env}\n${name}`);
    if (device) {
      device.tick = true;
      // The data points with values keep their place (the values refer to it); the others follow.
      const merged = new Map(device.sensors);
      for (const [sensor, meta] of sensors) if (!merged.has(sensor)) merged.set(sensor, meta);
      device.sensors = merged;
      continue;
    }
    devices.push({
      env,
      device: name,
      displayName: record.displayName.isWellFormed() ? record.displayName : record.displayName.toWellFormed(),
      contactMs: 0,
      timeoutMs: 0,
      sensors,
      values: [],
      readings: [],
      tick: true,
    });
  }
}

/** The record, definition, settings and locale of every ticked device, each definition read once. */
async function readTicked(ticks: readonly IngestItem[], catalog: Catalog) {
  const byEnv = new Map<string, Set<string>>();
  for (const t of ticks) {
    const names = byEnv.get(t.env) ?? new Set<string>();
    names.add(t.deviceName ?? '');
    byEnv.set(t.env, names);
  }
  const envs = await Promise.all(
    [...byEnv].map(async ([env, names]) => {
      const list = [...names];
      const [records, settings, environment] = await Promise.all([
        catalog.devices(env, list),
        catalog.deviceSettings(env, list),
        catalog.environment(env),
      ]);
      return { env, list, records, settings, locale: environment?.locale ?? 'en' };
    }),
  );
  const definitions = new Map<string, Promise<DefinitionRecord | null>>();
  const definitionOf = (env: string, d: DeviceRecord) => {
    const key = `${d.definitionIsPublic ? '' : env}\n${d.definitionName}\n${String(d.definitionIsPublic)}`;
    let found = definitions.get(key);
    if (!found) {
      found = catalog.definition(env, d.definitionName, d.definitionIsPublic);
      definitions.set(key, found);
    }
    return found;
  };
  return Promise.all(
    envs.flatMap(({ env, list, records, settings, locale }) =>
      list.map(async (name) => {
        const record = records.get(name);
        const definition = record ? await definitionOf(env, record) : null;
        return { env, name, record, definition, settings: settings.get(name), locale };
      }),
    ),
  );
}
