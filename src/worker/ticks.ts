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
  const byEnv = new Map<string, Set<string>>();
  for (const t of ticks) {
    const names = byEnv.get(t.env) ?? new Set<string>();
    names.add(t.deviceName ?? '');
    byEnv.set(t.env, names);
  }
  const present = new Map(devices.map((d) => [`${d.env}\n${d.device}`, d]));
  for (const [env, names] of byEnv) {
    const list = [...names];
    const [records, settings, environment] = await Promise.all([
      deps.catalog.devices(env, list),
      deps.catalog.deviceSettings(env, list),
      deps.catalog.environment(env),
    ]);
    for (const name of list) {
      const record = records.get(name);
      if (!record) continue;
      const definition = await deps.catalog.definition(env, record.definitionName, record.definitionIsPublic);
      if (!definition) continue;
      const sensors = timerPoints(definition.spec, {
        locale: environment?.locale ?? 'en',
        settings: settings.get(name),
        nowMs: deps.nowMs,
      });
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
        displayName: record.displayName.isWellFormed()
          ? record.displayName
          : record.displayName.toWellFormed(),
        contactMs: 0,
        timeoutMs: 0,
        sensors,
        values: [],
        readings: [],
        tick: true,
      });
    }
  }
}
