/**
 * Every InfluxQL query of every provisioned dashboard (panels, annotations, template variables) runs
 * against a real InfluxDB holding known history, with Grafana's variables substituted, and returns
 * the right series, tags and numbers — never another environment's.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { createHistoryWriter, type ContactPoint, type ValuePoint } from '../../src/history/history-writer.ts';
import type { InfluxClient, InfluxSeries } from '../../src/history/influx-client.ts';
import { queryLast24Hours, type Bucket } from '../../src/history/last-24-hours.ts';
import { msTime } from '../../src/history/influxql.ts';
import type { EventRecord, Status } from '../../src/domain/types.ts';
import { createLogger } from '../../src/log/logger.ts';
import { eventually } from '../support/eventually.ts';
import { freshHistoryDatabase, valuePoint } from '../support/history.ts';

const GRAFANA = join(import.meta.dirname, '../../grafana');
const MIN = 60_000;

interface DashboardQuery {
  dashboard: string;
  where: string;
  query: string;
}

function dashboards(): { file: string; json: Record<string, unknown> }[] {
  const dir = join(GRAFANA, 'dashboards');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .map((file) => ({
      file,
      json: JSON.parse(readFileSync(join(dir, file), 'utf8')) as Record<string, unknown>,
    }));
}

interface ValueMapping {
  type: string;
  options: Record<string, { text?: string }>;
}

interface Panel {
  title: string;
  type?: string;
  targets?: { query?: string }[];
  panels?: Panel[];
  fieldConfig?: {
    defaults?: { mappings?: ValueMapping[] };
    overrides?: { matcher: { id: string; options: string }; properties: { id: string; value: unknown }[] }[];
  };
}

/** Every panel of every dashboard, by title. */
function panelsByTitle(): Map<string, Panel> {
  const out = new Map<string, Panel>();
  const walk = (panels: Panel[] = []) => {
    for (const p of panels) {
      out.set(p.title, p);
      walk(p.panels);
    }
  };
  for (const { json } of dashboards()) walk(json.panels as Panel[]);
  return out;
}

/**
 * What a panel shows for `value` in column `field`: the text of the value mapping that applies to
 * that column (an override by its name first, else the panel's defaults, which apply to every
 * column), or the value itself.
 */
function shown(title: string, field: string, value: unknown): unknown {
  const panel = panelsByTitle().get(title);
  if (!panel) throw new Error(`no panel ${title}`);
  const override = panel.fieldConfig?.overrides?.find(
    (o) => o.matcher.id === 'byName' && o.matcher.options === field,
  );
  const mappings =
    (override?.properties.find((p) => p.id === 'mappings')?.value as ValueMapping[] | undefined) ??
    panel.fieldConfig?.defaults?.mappings ??
    [];
  for (const m of mappings) {
    const text = m.type === 'value' ? m.options[String(value)]?.text : undefined;
    if (text !== undefined) return text;
  }
  return value;
}

function queriesOf(dashboard: string, json: Record<string, unknown>): DashboardQuery[] {
  const out: DashboardQuery[] = [];
  const walk = (panels: Panel[] = []) => {
    for (const p of panels) {
      for (const t of p.targets ?? [])
        if (t.query) out.push({ dashboard, where: `panel ${p.title}`, query: t.query });
      walk(p.panels);
    }
  };
  walk(json.panels as Panel[]);
  const annotations = (
    json.annotations as { list: { name: string; query?: string; target?: { query?: string } }[] }
  ).list;
  for (const a of annotations) {
    for (const q of new Set([a.query, a.target?.query]))
      if (q) out.push({ dashboard, where: `annotation ${a.name}`, query: q });
  }
  for (const v of (json.templating as { list: { name: string; query?: string }[] }).list) {
    if (v.query) out.push({ dashboard, where: `variable ${v.name}`, query: v.query });
  }
  return out;
}

const ENV = 'demo';
const HALL = 'Hallway 1';
let influx: InfluxClient;
let nowMs: number;
let expectedBuckets: Bucket[];
const hallValues: ValuePoint[] = [];
const contacts: ContactPoint[] = [];

function substitute(query: string): string {
  return query
    .replaceAll('$timeFilter', `time >= ${msTime(nowMs - 3 * 60 * MIN)} AND time <= ${msTime(nowMs + MIN)}`)
    .replaceAll('$__interval', '1h')
    .replaceAll('$env', ENV)
    .replaceAll('$device', HALL)
    .replaceAll('$sensor', 'Temperature');
}

async function run(query: string): Promise<InfluxSeries[]> {
  const [series] = await influx.query(substitute(query), { method: 'POST' });
  return series ?? [];
}

const rowsOf = (series: InfluxSeries[]) =>
  series.flatMap((s) =>
    s.values.map((v) => ({ ...s.tags, ...Object.fromEntries(s.columns.map((c, i) => [c, v[i]])) })),
  );

beforeAll(async () => {
  influx = await freshHistoryDatabase({ resampleEvery: '1s' });
  const writer = createHistoryWriter({ influx, log: createLogger('silent') });
  nowMs = Date.now();
  const statuses: Status[] = ['SUCCESS', 'SUCCESS', 'WARNING', 'CRITICAL', 'SUCCESS', 'WARNING'];
  // From the start of the previous clock hour to now: inside the rollup query's FOR 2h window at
  // any time of day (its first interval is the first hour boundary after now − 2h).
  const from = Math.floor(nowMs / (60 * MIN)) * 60 * MIN - 60 * MIN;
  for (const [i, status] of statuses.entries()) {
    const timeMs = from + Math.floor((i * (nowMs - from)) / statuses.length);
    hallValues.push(valuePoint({ env: ENV, device: HALL, timeMs, value: 20 + i * 2.5, status }));
    contacts.push({ env: ENV, device: HALL, timeMs, offsetNs: 0 });
  }
  const label = valuePoint({
    env: ENV,
    device: HALL,
    sensor: 'Label',
    sensorType: 'string',
    dataType: 'string',
    timeMs: nowMs - 5 * MIN,
    value: 'open',
  });
  const d2 = valuePoint({ env: ENV, device: 'd2', timeMs: nowMs - 10 * MIN, value: 35, status: 'CRITICAL' });
  contacts.push({ env: ENV, device: 'd2', timeMs: d2.timeMs, offsetNs: 0 });
  // Another environment with the same sensor names and alarming values: must never show up.
  const intruder = [
    valuePoint({
      env: 'other',
      device: 'Intruder',
      timeMs: nowMs - 20 * MIN,
      value: 1000,
      status: 'CRITICAL',
    }),
    valuePoint({ env: 'other', device: HALL, timeMs: nowMs - 20 * MIN, value: 1000, status: 'CRITICAL' }),
  ];
  const event = (over: Partial<EventRecord>): EventRecord => ({
    id: `ev-${over.deviceName}-${over.receivedMs}`,
    env: ENV,
    deviceName: HALL,
    displayName: 'Hallway',
    sensorName: 'Temperature',
    sensorType: 'tempC',
    sensorValue: 25,
    eventStatus: 'WARNING',
    eventCategory: 'Sensors',
    eventMessage: 'Temperature - Above 24 °C - WARNING - 25.0 °C',
    receivedMs: nowMs - 60 * MIN,
    ...over,
  });
  await writer.write({
    values: [...hallValues, label, d2, ...intruder],
    contacts: [...contacts, { env: 'other', device: 'Intruder', timeMs: nowMs - 20 * MIN, offsetNs: 0 }],
    events: [
      event({}),
      event({
        deviceName: 'd2',
        eventCategory: 'Availability',
        eventStatus: 'ERROR',
        sensorName: 'availability',
        sensorType: 'availability',
        sensorValue: 61,
        eventMessage: 'availability - No contact for 61 minutes - ERROR - x',
        receivedMs: nowMs - 30 * MIN,
      }),
      event({ env: 'other', deviceName: 'Intruder', receivedMs: nowMs - 30 * MIN }),
      event({ env: 'other', deviceName: HALL, eventCategory: 'Availability', receivedMs: nowMs - 30 * MIN }),
    ],
  });
  expectedBuckets =
    (await queryLast24Hours(influx, ENV, [{ device: HALL, sensor: 'Temperature' }], nowMs)).get(
      `${HALL}|Temperature`,
    ) ?? [];
  expect(expectedBuckets.reduce((n, b) => n + b.count, 0)).toBe(hallValues.length);
  // Wait for the rollup continuous query (RESAMPLE EVERY 1s here) to cover every value.
  await eventually(
    async () =>
      rowsOf(
        await run(
          `SELECT sum("count") AS n FROM "long"."readings_hourly" WHERE "env" = '$env' AND "device" = '$device'`,
        ),
      )[0]?.n === hallValues.length,
    { timeoutMs: 20_000, intervalMs: 200, message: 'the rollups to cover every value' },
  );
});

const all = dashboards().flatMap(({ file, json }) => queriesOf(file, json));

describe('Grafana provisioning', () => {
  it('provisions the InfluxQL data source and the dashboards folder', () => {
    const ds = parseYaml(readFileSync(join(GRAFANA, 'provisioning/datasources/influxdb.yaml'), 'utf8')) as {
      datasources: { uid: string; type: string; url: string; jsonData: { dbName: string } }[];
    };
    expect(ds.datasources[0]).toMatchObject({
      uid: 'vigil-influxdb',
      type: 'influxdb',
      url: 'http://influxdb:8086',
      jsonData: { dbName: 'vigil' },
    });
    const dash = parseYaml(readFileSync(join(GRAFANA, 'provisioning/dashboards/vigil.yaml'), 'utf8')) as {
      providers: { options: { path: string } }[];
    };
    expect(dash.providers[0]?.options.path).toBe('/var/lib/grafana/dashboards');
    expect(
      dashboards()
        .map((d) => d.json.title)
        .sort(),
    ).toEqual(['Vigil — Device detail', 'Vigil — Fleet overview']);
  });

  it('filters every query by the env variable (template variable listing environments aside)', () => {
    expect(all.length).toBeGreaterThan(15);
    for (const q of all.filter((q) => q.where !== 'variable env')) {
      expect(q.query, `${q.dashboard} ${q.where}`).toContain(`"env" = '$env'`);
    }
  });
});

describe.each(all.map((q) => [`${q.dashboard} › ${q.where}`, q] as const))('%s', (_name, q) => {
  it('returns data of the chosen environment only', async () => {
    const series = await run(q.query);
    const rows = rowsOf(series);
    expect(rows.length, substitute(q.query)).toBeGreaterThan(0);
    const text = JSON.stringify(series);
    expect(text).not.toContain('Intruder');
    // The other environment's values are all 1000 (a substring check could hit a timestamp).
    expect(rows.flatMap((r) => Object.values(r))).not.toContain(1000);
    if (q.where === 'variable env') expect(rows.map((r) => r.value)).toEqual(['demo', 'other']);
  });
});

describe('dashboard numbers for known input', () => {
  const find = (title: string) => {
    const q = all.find((x) => x.where === `panel ${title}` || x.where === title);
    if (!q) throw new Error(`no query ${title}`);
    return run(q.query).then(rowsOf);
  };

  it('fleet overview: last contact and worst current status per device', async () => {
    const contact = await find('Devices: last contact');
    expect(contact.map((r) => [r.device, r.time])).toEqual([
      [HALL, Math.max(...contacts.filter((c) => c.device === HALL).map((c) => c.timeMs))],
      ['d2', nowMs - 10 * MIN],
    ]);
    const worst = await find('Devices: worst current status');
    expect(worst.map((r) => [r.device, r.worst])).toEqual([
      [HALL, 2],
      ['d2', 4],
    ]);
    const notOk = await find('Data points not in SUCCESS');
    expect(
      notOk.map((r) => [r.device, r.sensor, shown('Data points not in SUCCESS', 'status', r.status)]),
    ).toEqual([
      [HALL, 'Temperature', 'WARNING'],
      ['d2', 'Temperature', 'CRITICAL'],
    ]);
    expect(shown('Devices: worst current status', 'worst', 4)).toBe('CRITICAL');
  });

  it('fleet overview: payloads and events per hour, latest events', async () => {
    const payloads = await find('Payloads per hour');
    expect(payloads.reduce((n, r) => n + Number(r.payloads), 0)).toBe(contacts.length);
    const events = await find('Events per hour');
    expect(events.reduce((n, r) => n + Number(r.events), 0)).toBe(2);
    const latest = await find('Latest events');
    expect(latest.map((r) => [r.device, r.category, r.status])).toEqual([
      ['d2', 'Availability', 'ERROR'],
      [HALL, 'Sensors', 'WARNING'],
    ]);
  });

  it('device detail: raw hourly means and hourly rollups equal last24Hours', async () => {
    const raw = await find('$sensor: raw values (short ranges)');
    expect(raw.map((r) => [r.time, r.Temperature])).toEqual(
      expectedBuckets.map((b) => [b.sUTC * 1000, b.avg]),
    );
    const rollups = await find('$sensor: hourly rollups (long ranges)');
    expect(rollups.map((r) => [r.time, r.max, r.min])).toEqual(
      expectedBuckets.map((b) => [b.sUTC * 1000, b.max, b.min]),
    );
    for (const [i, b] of expectedBuckets.entries()) expect(rollups[i]?.avg).toBeCloseTo(b.avg, 9);
  });

  it('device detail: statuses, values, contact, events and annotations of the chosen device', async () => {
    const timeline = await find('$sensor: status');
    expect(timeline.map((r) => shown('$sensor: status', 'status', r.status))).toEqual(
      hallValues.map((v) => v.status),
    );
    const points = await find('Data points of $device: newest value and status');
    const pointsTitle = 'Data points of $device: newest value and status';
    expect(points.map((r) => [r.sensor, shown(pointsTitle, 'status', r.status)])).toEqual([
      ['Label', 'SUCCESS'],
      ['Temperature', 'WARNING'],
    ]);
    expect(points.find((r) => r.sensor === 'Label')?.text).toBe('open');
    const tableTitle = '$sensor: values with status (text and GPS too)';
    const table = await find(tableTitle);
    expect(table).toHaveLength(hallValues.length);
    expect(table.map((r) => shown(tableTitle, 'status', r.status))).toEqual(
      hallValues.map((v) => v.status).reverse(),
    );
    const contact = await find('Last contact');
    expect(contact[0]?.time).toBe(hallValues.at(-1)?.timeMs);
    const events = await find('Events of $device');
    expect(events.map((r) => r.message)).toEqual(['Temperature - Above 24 °C - WARNING - 25.0 °C']);
    const annotations = await find('annotation Events of $device');
    expect(annotations.map((r) => [r.status, r.sensor])).toEqual([['WARNING', 'Temperature']]);
    const sensors = await find('variable sensor');
    expect(sensors.map((r) => r.value)).toEqual(['Label', 'Temperature']);
    const devices = await find('variable device');
    expect(devices.map((r) => r.value)).toEqual([HALL, 'd2']);
  });

  it('shows status names in status columns only: a value of 2 stays 2, not WARNING', () => {
    for (const title of [
      'Data points not in SUCCESS',
      'Data points of $device: newest value and status',
      '$sensor: values with status (text and GPS too)',
    ]) {
      expect(shown(title, 'status', 2), title).toBe('WARNING');
      expect(shown(title, 'value', 2), title).toBe(2);
    }
  });
});
