import ivm from 'isolated-vm';
import { describeUserError } from './host-errors.ts';
import type { ParserFormat } from './parser-code.ts';

/** A refused source: the message, and where in it the error is when the compiler says. */
export type SyntaxCheck = { ok: true } | { ok: false; message: string; line?: number; column?: number };

/**
 * Compiles a parser without running any of it, in a throwaway 8 MB isolate, and reports a syntax
 * error as `SyntaxError: … (at file.js:line:column)`. Also refuses a source that never mentions
 * parsePayload, or decodeUplink for a 'ts013' codec (a textual check, since whether it really
 * defines the function is only known by running it; the sandbox reports that case as PARSER_ERROR
 * 'parsePayload is not defined').
 * For the CLI, when a definition or pre-parser is applied, and the management API's
 * /preparser/set; needs node --no-node-snapshot.
 */
export function checkSyntax(
  source: string,
  filename: string,
  format: ParserFormat = 'parsePayload',
): SyntaxCheck {
  const isolate = new ivm.Isolate({ memoryLimit: 8 });
  try {
    isolate.compileScriptSync(source, { filename }).release();
  } catch (err) {
    const message = describeUserError(err, filename);
    // describeUserError ends with the place it found: ` (at file.js:line:column)`.
    const at = / \(at .*:(\d+):(\d+)\)$/.exec(message);
    return at ? { ok: false, message, line: Number(at[1]), column: Number(at[2]) } : { ok: false, message };
  } finally {
    isolate.dispose();
  }
  const mention = format === 'ts013' ? /\bdecodeUplink\b/ : /\bparsePayload\b/;
  if (!mention.test(source)) {
    const signature = format === 'ts013' ? 'decodeUplink(input)' : 'parsePayload(payloadStr, payloadRaw)';
    return { ok: false, message: `${filename} does not define ${signature}` };
  }
  return { ok: true };
}
