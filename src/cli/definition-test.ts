/**
 * `vigil definition test`: runs a definition's parser in the real sandbox on one payload and
 * shows what the service would store for each data point — converted value, currentValue as
 * formatted, status from the definition's thresholds — or the parser's error with its line
 * (worker/definition-trial.ts, which the console's parser workbench runs too).
 */
import type { DefinitionSpec, Locale } from '../domain/types.ts';
import type { Logger } from '../log/logger.ts';
import { createSandbox } from '../sandbox/sandbox.ts';
import { tryDefinition, type DefinitionTestReport } from '../worker/definition-trial.ts';

export type { DataPointResult, DefinitionTestReport } from '../worker/definition-trial.ts';

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

/** The one environment of the command's own sandbox: the definition is tried outside any environment. */
const CLI_ENV = 'definition-test';

/** Runs the definition's parser on the payload in a sandbox of its own, closed afterwards. */
export function runDefinitionTest(input: DefinitionTestInput): DefinitionTestReport {
  const sandbox = createSandbox({
    timeoutMs: input.timeoutMs,
    memoryLimitMb: input.memoryLimitMb,
    log: input.log,
  });
  try {
    return tryDefinition(sandbox, { ...input, env: CLI_ENV });
  } finally {
    sandbox.close();
  }
}

/** Human-readable lines of a report. */
export function describeReport(report: DefinitionTestReport): string[] {
  const logs = report.logs.map((l) => `console: ${l}`);
  if (!report.ok) return [...logs, `${report.code}: ${report.message}`];
  const width = Math.max(...report.dataPoints.map((p) => p.sensorName.length), 4);
  const lines = report.dataPoints.flatMap((p) => {
    const name = p.sensorName.padEnd(width);
    if (p.conversionError) return `${name}  dropped (VALUE_CONVERSION_FAILED): ${p.conversionError}`;
    if (p.currentValue === null) return `${name}  (not returned)`;
    const reason = p.reason ? ` (${p.reason})` : '';
    const line = `${name}  ${p.currentValue.padEnd(14)}  ${(p.currentStatus ?? '').padEnd(8)}${reason}  raw ${JSON.stringify(p.rawValue)}`;
    // A rule that waits is a condition pending, not a status: say what would follow.
    const waiting = (p.waiting ?? []).map(
      (w) => `${' '.repeat(width)}  pending: ${w.status} (${w.reason}) if the value holds`,
    );
    return [line, ...waiting];
  });
  const unknown =
    report.unknownKeys.length > 0 ? [`ignored (UNKNOWN_DATA_POINT): ${report.unknownKeys.join(', ')}`] : [];
  return [...logs, ...lines, ...unknown];
}
