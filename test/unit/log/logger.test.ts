import { describe, expect, it } from 'vitest';
import { captureLog } from '../../support/log-lines.ts';

interface LoggedError {
  type: string;
  message: string;
  stack: string;
  command?: { name: string; args: unknown };
}

describe('createLogger', () => {
  it('logs an error as `err` with its type, stack and cause', () => {
    const { log, lines } = captureLog();
    const cause = new Error('connect ECONNREFUSED 127.0.0.1:6379');
    log.warn({ err: new TypeError('reading the queue failed', { cause }) }, 'retrying');
    const err = lines[0]?.err as LoggedError;
    expect(err.type).toBe('TypeError');
    expect(err.message).toContain('reading the queue failed');
    expect(err.stack).toContain('logger.test.ts');
    expect(err.stack).toContain('ECONNREFUSED');
  });

  it("leaves out a failed Redis command's arguments, which may hold payloads and keys", () => {
    const { log, lines } = captureLog();
    // ioredis attaches the command to the error (a ReplyError) of a command Redis refused.
    const err = Object.assign(new Error('NOSCRIPT No matching script'), {
      name: 'ReplyError',
      command: { name: 'evalsha', args: ['sha', '1', 'vigil:env:acme:device:d1', '{"secret":"payload"}'] },
    });
    log.warn({ err }, 'step failed');
    log.warn({ err: new AggregateError([err], 'two parts failed') }, 'stop failed');
    expect(JSON.stringify(lines)).not.toContain('payload');
    expect((lines[0]?.err as LoggedError).command).toEqual({ name: 'evalsha', args: '[redacted]' });
  });
});
