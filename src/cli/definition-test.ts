/**
 * `vigil definition test`: runs a definition's parser in the real sandbox on one payload and
 * shows what the service would store for each data point — converted value, currentValue as
 * formatted, status from the definition's thresholds — or the parser's error with its line. The
 * values come from the worker's own conversion (convertDevice), so the test fails where the worker
 * would (PROCESSING_FAILED) and shows what it would store.
 */
import { DATA_TYPE_INFO } from '../domain/data-types.ts';
import type { DataValue, DefinitionSpec, Locale, Status } from '../domain/types.ts';
import type { Logger } from '../log/logger.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import { createSandbox } from '../sandbox/sandbox.ts';
import type { DefinitionRecord, DeviceRecord } from '../tenancy/types.ts';
import { convertDevice, type ConversionReport, type ConvertedDevice } from '../worker/convert.ts';
import type { ParsedReading } from '../worker/parse.ts';

export interface DataPointResult {
  sensorName: string;
  sensorType: string;
  /** What parsePayload returned for it (absent = not returned). */
  parsed?: unknown;
  rawValue: DataValue | null;
  currentValue: string | null;
  currentStatus: Status | null;
  /** The rule's description (or the generated "Above 25 °C"). */
  reason: string | null;
  /** Why the value was dropped (VALUE_CONVERSION_FAILED). */
  conversionError?: string;
}

/** What the parser's result converts to, or why it does not. */
type Conversion =
  | { ok: true; dataPoints: DataPointResult[]; unknownKeys: string[] }
  | { ok: false; code: string; message: string };

export type DefinitionTestReport = Conversion & { logs: string[] };

export interface DefinitionTestInput {
  spec: DefinitionSpec;
  parserSource: string;
  parserFilename: string;
  payload: string;
  locale: Locale;
  timeoutMs: number;
  memoryLimitMb: number;
  log: Logger;
}

export function runDefinitionTest(input: DefinitionTestInput): DefinitionTestReport {
  const sandbox = createSandbox({
    timeoutMs: input.timeoutMs,
    memoryLimitMb: input.memoryLimitMb,
    log: input.log,
  });
  try {
    const [outcome] = sandbox.run(
      {
        id: `test:${input.spec.name}`,
        revision: 1,
        source: input.parserSource,
        filename: input.parserFilename,
      },
      [{ payloadStr: input.payload, payloadRaw: input.payload }],
      { expectObject: true },
    );
    if (!outcome)
      return { ok: false, code: 'PARSER_ERROR', message: 'the sandbox returned nothing', logs: [] };
    const logs = outcome.logs ?? [];
    if (!outcome.ok) return { ok: false, code: outcome.code, message: outcome.message, logs };
    return { ...convertResult(input, outcome.value as Record<string, unknown>), logs };
  } finally {
    sandbox.close();
  }
}

/** Where the test's values are converted: a device of its own, in no environment. */
const TEST_ENV = 'definition-test';
const TEST_DEVICE = 'definition-test';

/** What the worker's conversion makes of a parser's result, for a device without overrides. */
function convertResult(
  input: Pick<DefinitionTestInput, 'spec' | 'parserSource' | 'payload' | 'locale'>,
  result: Record<string, unknown>,
): Conversion {
  const nowMs = Date.now();
  const item: IngestItem = {
    id: TEST_ENV,
    env: TEST_ENV,
    gateway: 'submit',
    via: 'http',
    receivedMs: nowMs,
    body: input.payload,
    bodyIsHex: false,
    client: 'vigil definition test',
  };
  const device: DeviceRecord = {
    env: TEST_ENV,
    deviceName: TEST_DEVICE,
    displayName: TEST_DEVICE,
    definitionName: input.spec.name,
    definitionIsPublic: false,
    createdUTC: '',
  };
  const definition: DefinitionRecord = {
    isPublic: false,
    env: TEST_ENV,
    spec: input.spec,
    parserSource: input.parserSource,
    revision: 1,
    updatedUTC: '',
  };
  const reading: ParsedReading = {
    item,
    deviceName: TEST_DEVICE,
    payloadStr: input.payload,
    timeMs: nowMs,
    deviceTime: false,
    index: 0,
    direct: false,
    device,
    definition,
    values: result,
  };
  const dropped = new Map<string, string>();
  let unknownKeys: string[] = [];
  const report: ConversionReport = {
    accepted: () => undefined,
    dropped: (_r, key, reason) => dropped.set(key, reason),
    unknownKeys: (_r, keys) => (unknownKeys = keys),
  };
  let converted: ConvertedDevice;
  try {
    const where = {
      env: TEST_ENV,
      locale: input.locale,
      settings: undefined,
      defaultAvailabilityMinutes: 0,
      nowMs,
    };
    converted = convertDevice(device, [reading], where, report);
  } catch (err) {
    const message = err instanceof Error ? `${err.name}: ${err.message}` : 'conversion threw';
    return { ok: false, code: 'PROCESSING_FAILED', message: `the worker's conversion fails: ${message}` };
  }
  const points = input.spec.dataPoints.map((p) => pointResult(p, result, converted, dropped.get(p.name)));
  return { ok: true, dataPoints: points, unknownKeys };
}

function pointResult(
  point: DefinitionSpec['dataPoints'][number],
  result: Record<string, unknown>,
  converted: ConvertedDevice,
  conversionError: string | undefined,
): DataPointResult {
  const base = { sensorName: point.name, sensorType: DATA_TYPE_INFO[point.dataType].sensorType };
  const empty = { rawValue: null, currentValue: null, currentStatus: null, reason: null };
  if (!Object.hasOwn(result, point.name)) return { ...base, ...empty };
  const parsed = result[point.name];
  if (conversionError !== undefined) return { ...base, parsed, ...empty, conversionError };
  const value = converted.values.find((v) => v.sensor === point.name);
  if (!value) return { ...base, parsed, ...empty };
  // The status without a previous one (outcome of previous rule -1), and its rule's description.
  const rule = value.outcomes[0] ?? -1;
  const meta = converted.sensors.get(point.name);
  return {
    ...base,
    parsed,
    // What the read API shows: the stored JSON, read back.
    rawValue: JSON.parse(value.valueJson) as DataValue,
    currentValue: value.currentValue,
    currentStatus: value.status,
    reason: rule >= 0 ? (meta?.descriptions[rule] ?? null) : null,
  };
}

/** Human-readable lines of a report. */
export function describeReport(report: DefinitionTestReport): string[] {
  const logs = report.logs.map((l) => `console: ${l}`);
  if (!report.ok) return [...logs, `${report.code}: ${report.message}`];
  const width = Math.max(...report.dataPoints.map((p) => p.sensorName.length), 4);
  const lines = report.dataPoints.map((p) => {
    const name = p.sensorName.padEnd(width);
    if (p.conversionError) return `${name}  dropped (VALUE_CONVERSION_FAILED): ${p.conversionError}`;
    if (p.currentValue === null) return `${name}  (not returned)`;
    const reason = p.reason ? ` (${p.reason})` : '';
    return `${name}  ${p.currentValue.padEnd(14)}  ${(p.currentStatus ?? '').padEnd(8)}${reason}  raw ${JSON.stringify(p.rawValue)}`;
  });
  const unknown =
    report.unknownKeys.length > 0 ? [`ignored (UNKNOWN_DATA_POINT): ${report.unknownKeys.join(', ')}`] : [];
  return [...logs, ...lines, ...unknown];
}
