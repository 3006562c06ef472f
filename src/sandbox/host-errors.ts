import { MESSAGE_MAX_CHARS } from './harness.ts';

// isolated-vm's own wording, stable across 5.x–7.x: its errors carry no class or code to read instead.
const TIMEOUT_MESSAGE = 'Script execution timed out';
const MEMORY_MESSAGE = 'memory limit';

/** Whether an isolated-vm call failed because its timeout fired. */
export function isTimeout(err: unknown): boolean {
  return err instanceof Error && err.message.includes(TIMEOUT_MESSAGE);
}

/** Whether an isolated-vm call failed because the isolate went over its memory limit (it is then disposed). */
export function isMemoryLimit(err: unknown): boolean {
  return err instanceof Error && err.message.includes(MEMORY_MESSAGE);
}

/**
 * Describes an error thrown by user code (or its compilation) as it reached the host:
 * `Name: message (at file.js:line:column)`, the location being the first one in the user's file.
 * isolated-vm reports a compile error as `message [file:line:column]`; a runtime error carries the
 * location in its stack.
 */
export function describeUserError(err: unknown, filename: string): string {
  if (!(err instanceof Error)) return clip(`the parser threw ${String(err)}`);
  const compile = /^(.*) \[(.*):(\d+):(\d+)\]$/s.exec(err.message);
  if (compile !== null) {
    const [, message = '', file = filename, line = '', column = ''] = compile;
    return `${clip(`${err.name}: ${message}`)} (at ${file}:${line}:${column})`;
  }
  return clip(`${err.name}: ${err.message}`) + locate(err.stack ?? '', filename);
}

/** ' (at file.js:3:9)' for the first stack frame in `filename`, '' when there is none. */
export function locate(stack: string, filename: string): string {
  let at = stack.indexOf(`(${filename}:`);
  if (at < 0) at = stack.indexOf(` ${filename}:`);
  if (at < 0) return '';
  const found = /^(\d+):(\d+)/.exec(stack.slice(at + filename.length + 2));
  return found === null ? '' : ` (at ${filename}:${found[1]}:${found[2]})`;
}

function clip(text: string): string {
  return text.length > MESSAGE_MAX_CHARS ? `${text.slice(0, MESSAGE_MAX_CHARS)}…` : text;
}
