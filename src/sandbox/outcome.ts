/** Why a payload failed in the sandbox; every code is in the error catalogue. */
export type ParserFailureCode =
  'PARSER_TIMEOUT' | 'PARSER_MEMORY' | 'PARSER_ERROR' | 'PARSER_BAD_RESULT' | 'PARSER_CODEC_ERRORS';

/**
 * The result of parsing one input. `value` has been through JSON (functions, symbols and undefined
 * are gone); for a ts013 codec it is the result's `data`, an object (`{}` when the codec returned
 * none). `warnings` holds a codec's warnings (at most 20, each a string), and is absent when it gave
 * none; a codec's errors make the outcome a PARSER_CODEC_ERRORS failure instead. `logs` holds what
 * the parser wrote with console.log & co for this input, bounded, and is absent when it wrote nothing.
 */
export type ParseOutcome =
  | { ok: true; value: unknown; warnings?: string[]; logs?: string[] }
  | { ok: false; code: ParserFailureCode; message: string; logs?: string[] };

export type ParseFailure = Extract<ParseOutcome, { ok: false }>;

export const PARSER_FAILURE_CODES: readonly ParserFailureCode[] = [
  'PARSER_TIMEOUT',
  'PARSER_MEMORY',
  'PARSER_ERROR',
  'PARSER_BAD_RESULT',
  'PARSER_CODEC_ERRORS',
];

export function parseFailure(code: ParserFailureCode, message: string): ParseFailure {
  return { ok: false, code, message };
}

/**
 * Reads the JSON string a batch call returned. The harness that wrote it shares its context with user
 * code, so nothing is taken on trust: anything that is not one well-formed outcome per input becomes
 * PARSER_BAD_RESULT.
 */
export function decodeBatchResult(output: unknown, count: number): ParseOutcome[] {
  const malformed = (): ParseOutcome[] =>
    Array.from({ length: count }, () =>
      parseFailure('PARSER_BAD_RESULT', 'the sandbox returned a malformed result'),
    );
  if (typeof output !== 'string') return malformed();
  let parsed: unknown;
  try {
    parsed = JSON.parse(output);
  } catch {
    return malformed();
  }
  if (!Array.isArray(parsed) || parsed.length !== count) return malformed();
  return parsed.map(toOutcome);
}

function toOutcome(entry: unknown): ParseOutcome {
  if (typeof entry !== 'object' || entry === null) {
    return parseFailure('PARSER_BAD_RESULT', 'the sandbox returned a malformed result');
  }
  const record = entry as Record<string, unknown>;
  // The common case: a fresh object of JSON.parse, already of the outcome's shape.
  if (record.ok === true && 'value' in record && record.logs === undefined && record.warnings === undefined) {
    return entry as ParseOutcome;
  }
  const logs = toStrings(record.logs);
  if (record.ok === true && 'value' in record) {
    const warnings = toStrings(record.warnings);
    return {
      ok: true,
      value: record.value,
      ...(warnings === undefined || warnings.length === 0 ? {} : { warnings }),
      ...(logs === undefined ? {} : { logs }),
    };
  }
  const code = PARSER_FAILURE_CODES.find((known) => known === record.code);
  if (record.ok === false && code !== undefined && typeof record.message === 'string') {
    const failed = parseFailure(code, record.message);
    return logs === undefined ? failed : { ...failed, logs };
  }
  return parseFailure('PARSER_BAD_RESULT', 'the sandbox returned a malformed result');
}

function toStrings(value: unknown): string[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value.filter((line): line is string => typeof line === 'string');
}
