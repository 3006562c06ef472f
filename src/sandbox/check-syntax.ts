import ivm from 'isolated-vm';
import { describeUserError } from './host-errors.ts';

export type SyntaxCheck = { ok: true } | { ok: false; message: string };

/**
 * Compiles a parser without running any of it, in a throwaway 8 MB isolate, and reports a syntax
 * error as `SyntaxError: … (at file.js:line:column)`. Also refuses a source that never mentions
 * parsePayload (a textual check, since whether it really defines the function is only known by
 * running it; the sandbox reports that case as PARSER_ERROR 'parsePayload is not defined').
 * For the CLI, when a definition or pre-parser is applied; needs node --no-node-snapshot.
 */
export function checkSyntax(source: string, filename: string): SyntaxCheck {
  const isolate = new ivm.Isolate({ memoryLimit: 8 });
  try {
    isolate.compileScriptSync(source, { filename }).release();
  } catch (err) {
    return { ok: false, message: describeUserError(err, filename) };
  } finally {
    isolate.dispose();
  }
  if (!/\bparsePayload\b/.test(source)) {
    return { ok: false, message: `${filename} does not define parsePayload(payloadStr, payloadRaw)` };
  }
  return { ok: true };
}
