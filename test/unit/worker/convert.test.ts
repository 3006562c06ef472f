import { describe, expect, it } from 'vitest';
import type { DataPointSpec, DefinitionSpec, ThresholdSet } from '../../../src/domain/types.ts';
import type { IngestItem } from '../../../src/domain/ingest-item.ts';
import type { DeviceSettings } from '../../../src/tenancy/tenancy-store.ts';
import type { DefinitionRecord, DeviceRecord } from '../../../src/tenancy/types.ts';
import type { Catalog } from '../../../src/tenancy/catalog.ts';
import { convertReadings } from '../../../src/worker/convert.ts';
import { createFailures } from '../../../src/worker/failures.ts';
import { OutcomeLog } from '../../../src/worker/outcomes.ts';
import type { ParsedReading } from '../../../src/worker/parse.ts';

const SPECIAL = ['constructor', '__proto__', 'toString', 'hasOwnProperty', 'valueOf'];
const NOW = Date.UTC(2026, 10, 22, 12);

const point = (name: string, dataType = 'number'): DataPointSpec =>
  ({
    name,
    displayName: name,
    dataType,
    hysteresis: 0,
    thresholds: [{ status: 'WARNING', above: 25 }],
  }) as DataPointSpec;

function definition(name: string, dataPoints: DataPointSpec[]): DefinitionRecord {
  const spec: DefinitionSpec = { name, manufacturer: 'Acme', version: '1', dataPoints };
  return {
    isPublic: false,
    env: 'e',
    spec,
    parserSource: '',
    version: 1,
    latest: 1,
    revision: 1,
    updatedUTC: '',
  };
}

function device(name: string, def: DefinitionRecord): DeviceRecord {
  return {
    env: 'e',
    deviceName: name,
    displayName: name,
    definitionName: def.spec.name,
    definitionIsPublic: false,
    labels: {},
    revision: 1,
    createdUTC: '',
  };
}

let ids = 0;
function reading(dev: DeviceRecord, def: DefinitionRecord, values: Record<string, unknown>): ParsedReading {
  ids += 1;
  const item: IngestItem = {
    id: `i${ids}`,
    env: 'e',
    gateway: 'submit',
    via: 'http',
    receivedMs: NOW,
    body: '{}',
    bodyIsHex: false,
    client: 'c',
  };
  return {
    item,
    deviceName: dev.deviceName,
    payloadStr: item.body,
    timeMs: NOW,
    deviceTime: false,
    index: 0,
    direct: false,
    device: dev,
    definition: def,
    values,
  };
}

/** A catalog that knows environment `e` and the device settings given. */
function catalogWith(settings: Map<string, DeviceSettings>): Catalog {
  const part: Pick<Catalog, 'environment' | 'deviceSettings'> = {
    environment: () => Promise.resolve({ name: 'e', locale: 'en', createdUTC: '' }),
    deviceSettings: (_env, names) =>
      Promise.resolve(
        new Map(names.flatMap((n) => (settings.has(n) ? [[n, settings.get(n)!] as const] : []))),
      ),
  };
  return part as Catalog;
}

/** An object with these own keys, as JSON.parse makes it (a literal `__proto__` would not be one). */
const own = (entries: [string, unknown][]) =>
  JSON.parse(JSON.stringify(Object.fromEntries(entries))) as Record<string, unknown>;

async function convert(parsed: ParsedReading[], settings = new Map<string, DeviceSettings>()) {
  const outcomes = new OutcomeLog();
  const warned: Record<string, unknown>[] = [];
  const failures = createFailures(outcomes, (f) => warned.push(f));
  const devices = await convertReadings(parsed, {
    catalog: catalogWith(settings),
    report: outcomes,
    defaultAvailabilityMinutes: 60,
    nowMs: NOW,
    failed: failures.device,
  });
  return { devices, outcomes, warned };
}

describe('convertReadings', () => {
  it('converts data points named like Object.prototype members, with their overrides and suppressions', async () => {
    const def = definition(
      'toString',
      SPECIAL.map((n) => point(n)),
    );
    const dev = device('__proto__', def);
    const critical: ThresholdSet = { rules: [{ status: 'CRITICAL', above: 5 }], hysteresis: 0 };
    const settings = new Map<string, DeviceSettings>([
      [
        '__proto__',
        { overrides: new Map([['constructor', critical]]), suppressed: new Map([['valueOf', 0]]) },
      ],
    ]);
    const { devices, outcomes } = await convert(
      [reading(dev, def, own(SPECIAL.map((n, i) => [n, 10 + 10 * i])))],
      settings,
    );
    expect(devices).toHaveLength(1);
    const [converted] = devices;
    // (Values come in the order of their history points, not of the result's keys.)
    expect(new Map(converted?.values.map((v) => [v.sensor, [v.valueJson, v.status]]))).toEqual(
      new Map([
        ['constructor', ['10', 'CRITICAL']],
        ['__proto__', ['20', 'SUCCESS']],
        ['toString', ['30', 'WARNING']],
        ['hasOwnProperty', ['40', 'WARNING']],
        ['valueOf', ['50', 'WARNING']],
      ]),
    );
    expect([...(converted?.sensors.keys() ?? [])]).toEqual(SPECIAL);
    expect(converted?.sensors.get('valueOf')?.suppressed).toBe(true);
    expect(converted?.sensors.get('toString')?.suppressed).toBe(false);
    expect(converted?.sensors.get('constructor')?.statuses).toEqual(['CRITICAL']);
    expect(outcomes.entries().map((e) => [e.outcome, e.code])).toEqual([['accepted', null]]);
    expect(outcomes.failures()).toEqual([]);
  });

  it('leaves out a device whose conversion throws, failing its payloads, and converts the others', async () => {
    // A definition of a later version: a data type this one does not know.
    const future = definition('Future', [point('Temperature', 'temperature'), point('Mood', 'mood')]);
    const plain = definition('Plain', [point('Temperature', 'temperature')]);
    const bad = device('bad', future);
    const good = device('good', plain);
    const parsed = [
      reading(good, plain, { Temperature: 20 }),
      reading(bad, future, { Temperature: 21, Mood: 'happy' }),
      reading(bad, future, { Temperature: 22 }),
      reading(good, plain, { Temperature: 23 }),
    ];
    const { devices, outcomes, warned } = await convert(parsed);
    expect(devices.map((d) => [d.device, d.values.map((v) => v.valueJson)])).toEqual([
      ['good', ['20', '23']],
    ]);
    const failed = outcomes.failures();
    expect(failed.map((f) => f.item)).toEqual([parsed[1]!.item, parsed[2]!.item]);
    expect(failed[0]?.reason).toMatch(/^e\/bad: TypeError: /);
    expect(outcomes.entries().map((e) => [e.deviceName, e.outcome, e.code])).toEqual([
      [null, 'accepted', null],
      [null, 'accepted', null],
      ['bad', 'rejected', 'PROCESSING_FAILED'],
      ['bad', 'rejected', 'PROCESSING_FAILED'],
    ]);
    expect(warned).toEqual([expect.objectContaining({ env: 'e', device: 'bad', payloads: 2 })]);
    expect(JSON.stringify(warned)).not.toContain('happy');
  });
});

describe('OutcomeLog', () => {
  it('puts PROCESSING_FAILED first and keeps the first reason of a payload that fails twice', () => {
    const log = new OutcomeLog();
    const def = definition('D', [point('T')]);
    const r = reading(device('d', def), def, {});
    log.dropped(r, 'T', 'expected a number, got "x"');
    log.failed(r.item, 'e/d: first', 'd');
    log.failed(r.item, 'e/d: second', 'd');
    expect(log.failures()).toEqual([{ item: r.item, reason: 'e/d: first' }]);
    const [entry] = log.entries();
    expect(entry).toMatchObject({ outcome: 'rejected', code: 'PROCESSING_FAILED', deviceName: 'd' });
    expect(entry?.message).toMatch(/dead-letter.*\(\+1 more: VALUE_CONVERSION_FAILED\)$/);
  });
});
