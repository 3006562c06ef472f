import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Creates the root logger. Secrets never reach it: API keys and tokens are redacted wherever
 * they could appear in a logged object.
 */
export function createLogger(level: string, base: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: { pid: process.pid, ...base },
    redact: {
      paths: [
        'apiKey',
        'token',
        'password',
        'authorization',
        '*.apiKey',
        '*.token',
        '*.password',
        '*.authorization',
        'req.headers.authorization',
      ],
      censor: '[redacted]',
    },
  });
}
