/**
 * `vigil definition test`: runs a definition's parser in the real sandbox on one payload and
 * shows what the service would store for each data point — converted value, currentValue as
 * formatted, status from the definition's thresholds — or the parser's error with its line.
 */
import { DATA_TYPE_INFO, convertValue, formatValue } from '../domain/data-types.ts';
import { evaluateStatus, ruleDescription } from '../domain/thresholds.ts';
import type { DataValue, DefinitionSpec, Locale, Status } from '../domain/types.ts';
import type { Logger } from '../log/logger.ts';
import { createSandbox } from '../sandbox/sandbox.ts';

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

export type DefinitionTestReport =
  | { ok: true; dataPoints: DataPointResult[]; unknownKeys: string[]; logs: string[] }
  | { ok: false; code: string; message: string; logs: string[] };

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
    const result = outcome.value as Record<string, unknown>;
    const names = new Set(input.spec.dataPoints.map((p) => p.name));
    return {
      ok: true,
      dataPoints: input.spec.dataPoints.map((p) => evaluatePoint(p, result, input.locale)),
      unknownKeys: Object.keys(result).filter((k) => !names.has(k)),
      logs,
    };
  } finally {
    sandbox.close();
  }
}

function evaluatePoint(
  point: DefinitionSpec['dataPoints'][number],
  result: Record<string, unknown>,
  locale: Locale,
): DataPointResult {
  const base = { sensorName: point.name, sensorType: DATA_TYPE_INFO[point.dataType].sensorType };
  const empty = { rawValue: null, currentValue: null, currentStatus: null, reason: null };
  if (!Object.hasOwn(result, point.name)) return { ...base, ...empty };
  const parsed = result[point.name];
  const converted = convertValue(point.dataType, parsed);
  if (converted === null) return { ...base, parsed, ...empty };
  if (!converted.ok) return { ...base, parsed, ...empty, conversionError: converted.reason };
  const set = { rules: point.thresholds, hysteresis: point.hysteresis };
  const { status, ruleIndex } = evaluateStatus(converted.value, set, -1);
  const rule = point.thresholds[ruleIndex];
  return {
    ...base,
    parsed,
    rawValue: converted.value,
    currentValue: formatValue(point.dataType, converted.value, locale),
    currentStatus: status,
    reason: rule ? ruleDescription(rule, point.dataType, locale) : null,
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
