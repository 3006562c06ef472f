/**
 * A logger configured as Vigil's own (createLogger: serializers, redaction) whose lines are kept in
 * memory, parsed, for a test to look at.
 */
import { Writable } from 'node:stream';
import { createLogger, type Logger } from '../../src/log/logger.ts';

export interface LogLines {
  log: Logger;
  /** Every line written so far, parsed. */
  lines: Record<string, unknown>[];
}

export function captureLog(level = 'debug'): LogLines {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger(level, {}, sink), lines };
}
