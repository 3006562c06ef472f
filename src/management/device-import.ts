/**
 * Devices in bulk: `/devices/import` takes a CSV file (a header row naming the columns, then a
 * device per row) or a JSON array of the same objects, and `/devices/export` gives the
 * environment's devices as that CSV. An import checks every row — each device's name, display
 * name, definition, labels and availability — before it writes anything: with one row wrong it
 * writes nothing and says which rows, fields and codes (`line` as an editor shows it: the header is
 * line 1). Rows that describe a device as it is already are left alone, so the same file imported
 * twice changes nothing the second time. `?dryRun=true` checks and counts without writing.
 *
 * Writing 100,000 devices is not one transaction (one would hold Redis for seconds): the devices
 * are written in batches, each record by the script that checks its revision. A device changed by
 * someone else between the check and its batch is not overwritten: it is reported as CONFLICT, the
 * rest is written, and the same file imported again applies what is left.
 */
import { parse as parseCsv } from 'csv-parse/sync';
import { stringify as stringifyCsv } from 'csv-stringify/sync';
import { attr, strictAttributes } from '../api/attributes.ts';
import { arrayOf, bool, int, objectOf, str } from '../api/json-schema.ts';
import {
  DEV_EUI_LABEL,
  deviceLabelsProblem,
  displayNameProblem,
  nameProblem,
  normalDeviceLabels,
} from '../domain/identifiers.ts';
import { AppError } from '../errors/app-error.ts';
import type { ErrorCode } from '../errors/catalogue.ts';
import type { DeviceInput } from '../tenancy/admin-devices.ts';
import type { DeviceImporter } from '../tenancy/admin-device-import.ts';
import type { TenancyStore } from '../tenancy/tenancy-store.ts';
import type { DeviceRecord } from '../tenancy/types.ts';
import { operation, unchanged, type Operation, type RawBody } from './operation.ts';

export const IMPORT_COLUMNS = [
  'deviceName',
  'displayName',
  'definitionName',
  'definitionIsPublic',
  'labels',
  'availabilityMinutes',
] as const;
type Column = (typeof IMPORT_COLUMNS)[number];

/** Most rows of one import. */
export const IMPORT_MAX_ROWS = 100_000;
/** The body limit of an import: 100,000 rows of a few hundred bytes. */
export const IMPORT_BODY_LIMIT = '64mb';
/** Rows reported as failed at most (the counts cover all). */
const FAILURES_SHOWN = 1000;

/** One row that cannot be imported. */
export interface ImportFailure {
  /** The row's line in the file (the header is line 1); for a JSON array, the item's position from 1. */
  line: number;
  /** The column at fault, or null for the row as a whole. */
  field: Column | null;
  code: ErrorCode;
  message: string;
}

export interface ImportReport {
  /** Rows: devices that are new, that change, that are as the row says already. */
  created: number;
  updated: number;
  unchanged: number;
  failed: ImportFailure[];
  /** Rows failed in all (`failed` lists the first thousand). */
  failedCount: number;
  dryRun: boolean;
}

interface Row {
  line: number;
  values: Partial<Record<Column, unknown>>;
}

export interface DeviceImportDeps {
  store: Pick<
    TenancyStore,
    'listDevices' | 'getDevices' | 'listedDevices' | 'listDefinitions' | 'devEuiOwners'
  >;
  devices: Pick<DeviceImporter, 'importDevices'>;
}

const REPORT_SCHEMA = objectOf({
  created: int,
  updated: int,
  unchanged: int,
  failed: arrayOf(objectOf({ line: int, field: { type: ['string', 'null'] }, code: str, message: str })),
  failedCount: int,
  dryRun: bool,
});

export function deviceImportOperations(deps: DeviceImportDeps): Operation[] {
  return [
    operation({
      path: '/devices/import',
      scope: 'admin',
      rawBody: { limit: IMPORT_BODY_LIMIT },
      attributes: strictAttributes({
        dryRun: attr.boolean().optional().describe('true: check and count, write nothing.'),
      }),
      answer: {
        summary:
          'Create and update devices from a CSV file (text/csv, a header row) or a JSON array; nothing is written unless every row is valid (400 IMPORT_REJECTED with the rows at fault)',
        data: REPORT_SCHEMA,
        errors: ['413'],
        body: {
          'text/csv': {
            schema: {
              type: 'string',
              description: `A header row naming the columns (${IMPORT_COLUMNS.join(', ')}; deviceName and definitionName required), then one device per row; labels as k=v;k=v.`,
            },
          },
          'application/json': {
            schema: arrayOf({
              type: 'object',
              properties: Object.fromEntries(IMPORT_COLUMNS.map((c) => [c, {}])),
            }),
          },
        },
      },
      async run(caller, a, body) {
        const rows = readRows(body ?? { text: '', contentType: undefined });
        const report = await importRows(caller.env, rows, a.dryRun === true);
        if (report.failedCount > 0 && !report.dryRun)
          throw new AppError(
            'IMPORT_REJECTED',
            `${report.failedCount} of ${rows.length} rows cannot be imported; nothing was written`,
            { details: { ...report } },
          );
        const counts = { created: report.created, updated: report.updated, unchanged: report.unchanged };
        if (report.dryRun || report.created + report.updated === 0) return unchanged(report);
        // One entry for the whole import, with its counts.
        return {
          data: report,
          changes: [{ action: 'device.import', target: `${rows.length} rows`, details: counts }],
        };
      },
    }),
    operation({
      path: '/devices/export',
      scope: 'read',
      attributes: strictAttributes({}),
      answer: {
        summary: "The environment's devices as the CSV /devices/import takes, by name",
        data: str,
        errors: [],
        csv: true,
      },
      async run(caller) {
        return unchanged(exportCsv(await deps.store.listDevices(caller.env)));
      },
    }),
  ];

  async function importRows(env: string, rows: Row[], dryRun: boolean): Promise<ImportReport> {
    const listed = await deps.store.listDefinitions(env);
    const keyOf = (isPublic: boolean, name: string) => `${String(isPublic)}\n${name}`;
    const dataPoints = new Map(
      listed.map((d) => [keyOf(d.isPublic, d.spec.name), new Set(d.spec.dataPoints.map((p) => p.name))]),
    );
    const definitions = new Set(dataPoints.keys());
    const failed: ImportFailure[] = [];
    const checked: { line: number; device: RowDevice }[] = [];
    const seen = new Map<string, number>();
    for (const row of rows) {
      const c = checkRow(row, definitions, seen);
      if ('failure' in c) failed.push(c.failure);
      else checked.push({ line: row.line, device: c.device });
    }
    // Only the devices the environment lists can exist: a fresh fleet's import reads no record.
    const names = checked.map((c) => c.device.name);
    const inList = await deps.store.listedDevices(env, names);
    const known = names.filter((_, i) => inList[i]);
    const found = new Map((await deps.store.getDevices(env, known)).map((d, i) => [known[i], d]));
    const current = names.map((n) => found.get(n) ?? null);
    const merges = checked.map((c, n) => {
      const now = current[n] ?? null;
      return { line: c.line, current: now, input: merged(c.device, now) };
    });
    const taken = await takenDevEuis(env, merges);
    failed.push(...taken.failures);
    failed.sort((a, b) => a.line - b.line);
    const plan = merges.filter((m) => !taken.lines.has(m.line));
    const changes = plan.filter((p) => !p.current || !sameAsInput(p.current, p.input));
    const report: ImportReport = {
      created: plan.filter((p) => !p.current).length,
      updated: changes.filter((p) => p.current).length,
      unchanged: plan.length - changes.length,
      failed: failed.slice(0, FAILURES_SHOWN),
      failedCount: failed.length,
      dryRun,
    };
    if (dryRun || failed.length > 0 || changes.length === 0) return report;
    const conflicts = await deps.devices.importDevices(
      env,
      changes.map((c) => ({ input: c.input, current: c.current })),
      (d) => dataPoints.get(keyOf(d.definitionIsPublic, d.definitionName)) ?? new Set(),
    );
    if (conflicts.length === 0) return report;
    const lineOf = new Map(changes.map((c) => [c.input.name, c.line]));
    const lost = conflicts.map(({ deviceName: name, code, holder }) => ({
      line: lineOf.get(name) ?? 0,
      field: code === 'CONFLICT' ? null : ('labels' as const),
      code,
      message:
        code === 'CONFLICT'
          ? `device ${name} changed while the import ran: not written; import again to apply this row`
          : `device ${holder ?? ''} took this ${DEV_EUI_LABEL} while the import ran: device ${name} not written`,
    }));
    return { ...report, failed: lost.slice(0, FAILURES_SHOWN), failedCount: lost.length };
  }

  /**
   * The rows whose DevEUI another row has (an earlier line) or another device holds, as failures:
   * a DevEUI moves from one device to another in two steps (removed, then given), never within one
   * import, whose rows are written in batches.
   */
  async function takenDevEuis(
    env: string,
    rows: readonly { line: number; input: DeviceInput }[],
  ): Promise<{ failures: ImportFailure[]; lines: Set<number> }> {
    const withEui = rows.filter((r) => r.input.labels?.[DEV_EUI_LABEL] !== undefined);
    const euis = withEui.map((r) => r.input.labels?.[DEV_EUI_LABEL] ?? '');
    const owners = await deps.store.devEuiOwners(env, euis);
    const failures: ImportFailure[] = [];
    const seen = new Map<string, number>();
    withEui.forEach((r, i) => {
      const eui = euis[i] ?? '';
      const earlier = seen.get(eui);
      const holder = owners[i];
      const message =
        earlier !== undefined
          ? `${DEV_EUI_LABEL} ${eui} is also on line ${earlier}`
          : holder !== null && holder !== undefined && holder !== r.input.name
            ? `${DEV_EUI_LABEL} ${eui} is device ${holder}'s already: change or remove it there first`
            : undefined;
      if (earlier === undefined) seen.set(eui, r.line);
      if (message !== undefined)
        failures.push({ line: r.line, field: 'labels', code: 'DEV_EUI_TAKEN', message });
    });
    return { failures, lines: new Set(failures.map((f) => f.line)) };
  }
}

/** The rows of a CSV or JSON body; INVALID_INPUT when the body is neither, or holds too many. */
function readRows(body: RawBody): Row[] {
  const text = body.text.replace(/^\uFEFF/, '');
  const json = /json/i.test(body.contentType ?? '') || text.trimStart().startsWith('[');
  const rows = json ? jsonRows(text) : csvRows(text);
  if (rows.length > IMPORT_MAX_ROWS)
    throw new AppError('INVALID_INPUT', `at most ${IMPORT_MAX_ROWS} rows per import (${rows.length} sent)`);
  return rows;
}

function jsonRows(text: string): Row[] {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new AppError('INVALID_JSON', 'The body is not valid JSON.');
  }
  if (!Array.isArray(data)) throw new AppError('INVALID_INPUT', 'a JSON import is an array of devices');
  return data.map((values: unknown, i) => ({
    line: i + 1,
    values:
      typeof values === 'object' && values !== null && !Array.isArray(values) ? values : { deviceName: null },
  }));
}

function csvRows(text: string): Row[] {
  let records: { record: string[]; info: { lines: number; raw?: string } }[];
  try {
    records = parseCsv(text, {
      info: true,
      raw: true,
      skip_empty_lines: true,
      relax_column_count: true,
    }) as unknown as typeof records;
  } catch (err) {
    const where = (err as { lines?: number }).lines;
    throw new AppError(
      'INVALID_INPUT',
      `the CSV cannot be read${where ? ` (line ${where})` : ''}: ${(err as Error).message}`,
      {
        details: { ...(where ? { line: where } : {}) },
      },
    );
  }
  const [header, ...body] = records;
  if (!header) throw new AppError('INVALID_INPUT', 'the CSV has no header row');
  const columns = header.record.map((c) => c.trim());
  const unknown = columns.find((c) => !(IMPORT_COLUMNS as readonly string[]).includes(c));
  if (unknown !== undefined)
    throw new AppError(
      'INVALID_INPUT',
      `line 1: unknown column ${JSON.stringify(unknown)}; the columns are ${IMPORT_COLUMNS.join(', ')}`,
      {
        details: { line: 1, field: unknown },
      },
    );
  for (const needed of ['deviceName', 'definitionName'] as const)
    if (!columns.includes(needed))
      throw new AppError('INVALID_INPUT', `line 1: the header has no column ${needed}`, {
        details: { line: 1, field: needed },
      });
  return body.map(({ record, info }) => {
    // `lines` counts to the record's end: a value with line breaks started that many lines before.
    const breaks = (info.raw?.replace(/\r?\n$/, '').match(/\n/g) ?? []).length;
    // An empty cell is '' (the field put back); a column the file lacks stays absent (left alone).
    const values: Partial<Record<Column, unknown>> = {};
    columns.forEach((c, i) => {
      values[c as Column] = record[i] ?? '';
    });
    return { line: info.lines - breaks, values };
  });
}

/**
 * What a row says of a device. A field left out (its column absent, or its property in JSON) stays
 * as it is on a device that exists; `null` (an empty cell) puts it back: the display name to the
 * device name, the labels to none, the availability to the definition's.
 */
interface RowDevice {
  name: string;
  definitionName: string;
  definitionIsPublic?: boolean;
  displayName?: string | null;
  labels?: Record<string, string> | null;
  availabilityMinutes?: number | null;
}

/** A row's device, or why it cannot be one. */
function checkRow(
  row: Row,
  definitions: ReadonlySet<string>,
  seen: Map<string, number>,
): { device: RowDevice } | { failure: ImportFailure } {
  const fail = (field: Column | null, code: ErrorCode, message: string) => ({
    failure: { line: row.line, field, code, message },
  });
  const v = row.values;
  const name = text(v.deviceName);
  const problem = nameProblem('device', name);
  if (problem !== undefined)
    return fail('deviceName', name === undefined ? 'MISSING_ATTRIBUTE' : 'INVALID_INPUT', problem);
  const earlier = seen.get(name as string);
  if (earlier !== undefined)
    return fail('deviceName', 'ALREADY_EXISTS', `device ${name} is also on line ${earlier}`);
  seen.set(name as string, row.line);
  const device: RowDevice = { name: name as string, definitionName: '' };
  if (v.displayName !== undefined) {
    const displayName = text(v.displayName) ?? null;
    const displayProblem = displayName === null ? undefined : displayNameProblem(displayName);
    if (displayProblem) return fail('displayName', 'INVALID_INPUT', displayProblem);
    device.displayName = displayName;
  }
  const definitionName = text(v.definitionName);
  if (definitionName === undefined)
    return fail('definitionName', 'MISSING_ATTRIBUTE', 'the definitionName is missing');
  device.definitionName = definitionName;
  if (v.definitionIsPublic !== undefined) {
    const isPublic = booleanOf(v.definitionIsPublic);
    if (isPublic === null)
      return fail('definitionIsPublic', 'INVALID_INPUT', 'definitionIsPublic must be true or false');
    device.definitionIsPublic = isPublic;
  }
  if (!definitions.has(`${String(device.definitionIsPublic ?? false)}\n${definitionName}`))
    return fail(
      'definitionName',
      'DEFINITION_NOT_FOUND',
      `no ${device.definitionIsPublic ? 'public' : 'private'} definition ${definitionName}`,
    );
  if (v.labels !== undefined) {
    const labels = labelsOf(v.labels);
    if (typeof labels === 'string') return fail('labels', 'INVALID_INPUT', labels);
    const labelProblem = deviceLabelsProblem(labels);
    if (labelProblem) return fail('labels', 'INVALID_INPUT', labelProblem);
    device.labels = Object.keys(labels).length === 0 ? null : normalDeviceLabels(labels);
  }
  if (v.availabilityMinutes !== undefined) {
    const raw = text(v.availabilityMinutes);
    const minutes = raw === undefined ? null : Number(raw);
    if (minutes !== null && !(Number.isFinite(minutes) && minutes > 0))
      return fail('availabilityMinutes', 'INVALID_INPUT', 'availabilityMinutes must be a positive number');
    device.availabilityMinutes = minutes;
  }
  return { device };
}

/** The device a row makes of `current` (null: a new one). */
function merged(row: RowDevice, current: DeviceRecord | null): DeviceInput {
  const keep = <T>(value: T | null | undefined, now: T | undefined): T | undefined =>
    value === undefined ? now : (value ?? undefined);
  const displayName = keep(row.displayName, current?.displayName);
  const minutes = keep(row.availabilityMinutes, current?.availabilityMinutes);
  return {
    name: row.name,
    definitionName: row.definitionName,
    definitionIsPublic: row.definitionIsPublic ?? current?.definitionIsPublic ?? false,
    ...(displayName === undefined ? {} : { displayName }),
    ...(minutes === undefined ? {} : { availabilityMinutes: minutes }),
    labels: keep(row.labels, current?.labels) ?? {},
  };
}

/** A cell or JSON value as text: a number counts (JSON), an object or list does not. */
const text = (v: unknown): string | undefined =>
  typeof v === 'string' ? v.trim() || undefined : typeof v === 'number' ? String(v) : undefined;

function booleanOf(v: unknown): boolean | null {
  if (v === undefined || v === null || v === '' || v === false) return false;
  if (v === true) return true;
  if (typeof v !== 'string' && typeof v !== 'number') return null;
  const t = String(v).trim().toLowerCase();
  return t === 'true' || t === '1' ? true : t === 'false' || t === '0' ? false : null;
}

/** Labels from `k=v;k=v` (CSV) or an object (JSON); the problem's text when they are neither. */
function labelsOf(v: unknown): Record<string, string> | string {
  if (v === undefined || v === null || v === '') return {};
  if (typeof v === 'object' && !Array.isArray(v)) {
    const out: Record<string, string> = {};
    for (const [k, x] of Object.entries(v)) {
      if (typeof x !== 'string') return `the value of label ${k} must be text`;
      out[k] = x;
    }
    return out;
  }
  if (typeof v !== 'string') return 'labels must be key=value pairs separated by ;';
  const out: Record<string, string> = {};
  for (const pair of v.split(';')) {
    if (pair.trim() === '') continue;
    const eq = pair.indexOf('=');
    if (eq < 1) return `label ${JSON.stringify(pair)} is not key=value`;
    out[pair.slice(0, eq).trim()] = pair.slice(eq + 1).trim();
  }
  return out;
}

/** Whether the stored device is what `input` describes. */
function sameAsInput(d: DeviceRecord, input: DeviceInput): boolean {
  const sorted = (labels: Readonly<Record<string, string>>) => JSON.stringify(Object.entries(labels).sort());
  return (
    d.displayName === (input.displayName ?? input.name) &&
    d.definitionName === input.definitionName &&
    d.definitionIsPublic === input.definitionIsPublic &&
    d.availabilityMinutes === input.availabilityMinutes &&
    sorted(d.labels) === sorted(input.labels ?? {})
  );
}

/** Devices as the import's CSV, by name. */
export function exportCsv(devices: readonly DeviceRecord[]): string {
  const rows = [...devices]
    .sort((a, b) => (a.deviceName < b.deviceName ? -1 : a.deviceName > b.deviceName ? 1 : 0))
    .map((d) => [
      d.deviceName,
      d.displayName,
      d.definitionName,
      String(d.definitionIsPublic),
      Object.entries(d.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(';'),
      d.availabilityMinutes === undefined ? '' : String(d.availabilityMinutes),
    ]);
  return stringifyCsv([[...IMPORT_COLUMNS], ...rows]);
}
