import { Writable } from 'node:stream';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { sampledWarning } from '../../../src/log/logger.ts';

describe('sampledWarning', () => {
  it('logs at most once per interval, with how many more there were since the last one', () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    let now = 0;
    const warn = sampledWarning(pino({ base: null }, sink), 'slow thing', 10_000, () => now);
    warn({ ms: 1 });
    now = 5_000;
    warn({ ms: 2 });
    warn({ ms: 3 });
    now = 10_000;
    warn({ ms: 4 });
    now = 12_000;
    warn({ ms: 5 });
    expect(lines.map(({ ms, similarSinceLast, msg }) => ({ ms, similarSinceLast, msg }))).toEqual([
      { ms: 1, similarSinceLast: undefined, msg: 'slow thing' },
      { ms: 4, similarSinceLast: 2, msg: 'slow thing' },
    ]);
  });
});
