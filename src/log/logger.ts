import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/**
 * Creates the root logger, writing to stdout unless given a `destination`. Errors are logged as
 * `err` (pino's serializer keeps their type, stack and cause). Secrets never reach it: API keys and
 * tokens are redacted wherever they could appear in a logged object, and so are the arguments of a
 * Redis command an error carries (ioredis attaches them: keys, payloads, hashed credentials).
 */
export function createLogger(
  level: string,
  base: Record<string, unknown> = {},
  destination?: DestinationStream,
): Logger {
  const options: LoggerOptions = {
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
        'err.command.args',
        'err.aggregateErrors[*].command.args',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * A warning that repeats many times a second under overload (slow worker steps, slow InfluxDB
 * writes): logged at most once per `intervalMs`, with how many more there were since the last one
 * (`similarSinceLast`), so an overloaded process stays readable and its log does not add to the load.
 */
export function sampledWarning(
  log: Logger,
  msg: string,
  intervalMs = 10_000,
  now: () => number = Date.now,
): (fields: Record<string, unknown>) => void {
  let lastMs = Number.NEGATIVE_INFINITY;
  let similar = 0;
  return (fields) => {
    const t = now();
    if (t - lastMs < intervalMs) {
      similar++;
      return;
    }
    log.warn(similar > 0 ? { ...fields, similarSinceLast: similar } : fields, msg);
    lastMs = t;
    similar = 0;
  };
}
