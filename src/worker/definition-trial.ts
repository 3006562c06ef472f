/**
 * A definition tried on one payload: its parser run in the real sandbox, its result converted by
 * the worker's own conversion (convertDevice) — converted value, currentValue as formatted, status
 * from the thresholds (without a previous status, so without hysteresis) — or the parser's error
 * with its line. `vigil definition test` and the console's parser workbench show it; as it is the
 * worker's code, a trial fails where the worker would (PROCESSING_FAILED) and shows what it stores.
 */
import { DATA_TYPE_INFO } from '../domain/data-types.ts';
import type { IngestItem } from '../domain/ingest-item.ts';
import { handWrittenFrame, networkDataOf, type NetworkData } from '../domain/network-messages.ts';
import type { DataValue, DefinitionSpec, Locale, Status } from '../domain/types.ts';
import type { Sandbox } from '../sandbox/sandbox.ts';
import type { DeviceSettings } from '../tenancy/tenancy-store.ts';
import type { DefinitionRecord, DeviceRecord } from '../tenancy/types.ts';
import { convertDevice, pointInput, type ConversionReport, type ConvertedDevice } from './convert.ts';
import type { ParsedReading } from './parse.ts';

export interface DataPointResult {
  sensorName: string;
  sensorType: string;
  /** What the parser returned for it, or the radio metadata it takes (absent = none). */
  parsed?: unknown;
  rawValue: DataValue | null;
  currentValue: string | null;
  currentStatus: Status | null;
  /** The rule's description (or the generated "Above 25 °C"). */
  reason: string | null;
  /**
   * Rules the value meets that wait (`for`) and would raise the status if the value held that long,
   * most severe first: a condition pending, not a status yet.
   */
  waiting?: { status: Status; reason: string; forMs: number }[];
  /** Why the value was dropped (VALUE_CONVERSION_FAILED). */
  conversionError?: string;
}

/** What the parser's result converts to, or why it does not. */
type Conversion =
  | { ok: true; dataPoints: DataPointResult[]; unknownKeys: string[] }
  | { ok: false; code: string; message: string };

export type DefinitionTestReport = Conversion & {
  logs: string[];
  /** What a codec warned of (`parserFormat: ts013`); absent when nothing. */
  warnings?: string[];
};

export interface DefinitionTrialInput {
  /** Whose parser isolate runs it: the environment trying it (the sandbox keeps environments apart). */
  env: string;
  spec: DefinitionSpec;
  parserSource: string;
  parserFilename: string;
  /**
   * What the parser receives as payloadStr. A codec (`parserFormat: ts013`) decodes the frame of
   * the network server message in `payloadRaw` (or `payload`), else bytes written in hex
   * (`2:01 0a ff`: port 2; port 1 when none is given).
   */
  payload: string;
  /**
   * What it receives as payloadRaw (the submission's body); `payload` when absent. When it is a
   * network server's message, its radio metadata fills the `radio` data points.
   */
  payloadRaw?: string;
  locale: Locale;
  /** A device's threshold overrides and suppressions, to get the statuses that device would. */
  settings?: DeviceSettings;
  /**
   * Sandbox cache identity of the parser (ParserCode.id and revision): the definition's own where
   * one of its stored versions runs, so the compiled parser is reused.
   */
  codeId?: string;
  revision?: number;
}

/**
 * Runs the definition's parser on one payload in `sandbox` and converts its result as the worker
 * would: synchronous, one sandbox call (at most the sandbox's time limit).
 */
export function tryDefinition(sandbox: Sandbox, input: DefinitionTrialInput): DefinitionTestReport {
  const raw = input.payloadRaw ?? input.payload;
  const network = networkDataOf(raw);
  const code = {
    env: input.env,
    id: input.codeId ?? `test:${input.spec.name}`,
    revision: input.revision ?? 1,
    source: input.parserSource,
    filename: input.parserFilename,
  };
  let outcome: ReturnType<Sandbox['run']>[number] | undefined;
  if (input.spec.parserFormat === 'ts013') {
    const frame = network ?? handWrittenFrame(input.payload);
    if ('problem' in frame) return { ok: false, code: 'INVALID_INPUT', message: frame.problem, logs: [] };
    // A message without a frame payload (a status report) has radio metadata only: no codec call.
    if (frame.bytesHex === undefined) return { ...convertResult(input, {}, network), logs: [] };
    const uplink = network
      ? { bytesHex: frame.bytesHex, fPort: network.radio.fPort ?? 0, recvTimeMs: network.recvTimeMs }
      : { bytesHex: frame.bytesHex, fPort: 'fPort' in frame ? frame.fPort : 1, recvTimeMs: Date.now() };
    [outcome] = sandbox.run({ ...code, format: 'ts013' }, [{ uplink }], { expectObject: true });
  } else {
    [outcome] = sandbox.run(code, [{ payloadStr: input.payload, payloadRaw: raw }], { expectObject: true });
  }
  if (!outcome) return { ok: false, code: 'PARSER_ERROR', message: 'the sandbox returned nothing', logs: [] };
  const logs = outcome.logs ?? [];
  if (!outcome.ok) return { ok: false, code: outcome.code, message: outcome.message, logs };
  const warnings = outcome.warnings;
  return {
    ...convertResult(input, outcome.value as Record<string, unknown>, network),
    logs,
    ...(warnings ? { warnings } : {}),
  };
}

/** Where the test's values are converted: a device of its own, in no environment. */
const TEST_ENV = 'definition-test';
const TEST_DEVICE = 'definition-test';

/** What the worker's conversion makes of a parser's result, for a device without overrides. */
function convertResult(
  input: DefinitionTrialInput,
  result: Record<string, unknown>,
  network: NetworkData | undefined,
): Conversion {
  const nowMs = Date.now();
  const reading = testReading(input, result, network, nowMs);
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
      settings: input.settings,
      defaultAvailabilityMinutes: 0,
      nowMs,
    };
    converted = convertDevice(reading.device, [reading], where, report);
  } catch (err) {
    const message = err instanceof Error ? `${err.name}: ${err.message}` : 'conversion threw';
    return { ok: false, code: 'PROCESSING_FAILED', message: `the worker's conversion fails: ${message}` };
  }
  const points = input.spec.dataPoints.map((p) =>
    pointResult(p, pointInput(p, result, network), converted, dropped.get(p.name)),
  );
  return { ok: true, dataPoints: points, unknownKeys };
}

/** The parsed reading of the test's device, as the worker's parse step would hand it on. */
function testReading(
  input: DefinitionTrialInput,
  result: Record<string, unknown>,
  network: NetworkData | undefined,
  nowMs: number,
): ParsedReading {
  const item: IngestItem = {
    id: TEST_ENV,
    env: TEST_ENV,
    gateway: 'submit',
    via: 'http',
    receivedMs: nowMs,
    body: input.payloadRaw ?? input.payload,
    bodyIsHex: false,
    client: 'vigil definition test',
  };
  const device: DeviceRecord = {
    env: TEST_ENV,
    deviceName: TEST_DEVICE,
    displayName: TEST_DEVICE,
    definitionName: input.spec.name,
    definitionIsPublic: false,
    labels: {},
    revision: 1,
    createdUTC: '',
  };
  const definition: DefinitionRecord = {
    isPublic: false,
    env: TEST_ENV,
    spec: input.spec,
    parserSource: input.parserSource,
    version: 1,
    latest: 1,
    revision: 1,
    updatedUTC: '',
  };
  return {
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
    ...(network ? { network } : {}),
  };
}

function pointResult(
  point: DefinitionSpec['dataPoints'][number],
  parsed: unknown,
  converted: ConvertedDevice,
  conversionError: string | undefined,
): DataPointResult {
  const base = { sensorName: point.name, sensorType: DATA_TYPE_INFO[point.dataType].sensorType };
  const empty = { rawValue: null, currentValue: null, currentStatus: null, reason: null };
  if (parsed === undefined) return { ...base, ...empty };
  if (conversionError !== undefined) return { ...base, parsed, ...empty, conversionError };
  const value = converted.values.find((v) => v.sensor === point.name);
  if (!value) return { ...base, parsed, ...empty };
  // The status without a previous one (outcome of previous rule -1), and its rule's description;
  // with rules that wait, the first rule met that applies at once, and the ones that wait before it.
  const meta = converted.sensors.get(point.name);
  const matched = value.matches?.[0];
  const waits = (i: number) => (meta?.forMs?.[i] ?? 0) > 0;
  const rule = matched ? (matched.find((i) => !waits(i)) ?? -1) : (value.outcomes[0] ?? -1);
  const waiting = (matched ?? []).filter(waits).map((i) => ({
    status: meta!.statuses[i]!,
    reason: meta!.descriptions[i]!,
    forMs: meta!.forMs![i]!,
  }));
  return {
    ...base,
    parsed,
    // What the read API shows: the stored JSON, read back.
    rawValue: JSON.parse(value.valueJson) as DataValue,
    currentValue: value.currentValue,
    currentStatus: value.status,
    reason: rule >= 0 ? (meta?.descriptions[rule] ?? null) : null,
    ...(waiting.length > 0 ? { waiting } : {}),
  };
}
