/**
 * How failures reach a read-API client: AppErrors with their code, status, details and Retry-After;
 * an unreachable Redis or InfluxDB as 503 UNAVAILABLE; anything else as 500 INTERNAL with a generic
 * message (the error itself goes to the log only). Never a stack trace or an internal message.
 */
import type { ServerResponse } from 'node:http';
import { AppError, errorBody, isAppError } from '../errors/app-error.ts';
import { sendJson } from '../http/send-json.ts';
import { InfluxError } from '../history/influx-client.ts';
import type { Logger } from '../log/logger.ts';

/** Translates any thrown value into the error AppError the client sees. */
export function toClientError(err: unknown, log: Logger, context: Record<string, unknown>): AppError {
  if (isAppError(err)) {
    if (err.status >= 500) log.error({ err, ...context }, 'read API fault');
    return err;
  }
  if (isDependencyDown(err)) {
    log.warn({ err, ...context }, 'read API dependency unavailable');
    return new AppError('UNAVAILABLE', 'A storage server is unavailable; try again shortly.', {
      retryAfterSeconds: 1,
    });
  }
  log.error({ err, ...context }, 'read API fault');
  return new AppError('INTERNAL', 'Internal error.');
}

export function sendError(res: ServerResponse, err: AppError): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  if (err.code === 'UNAUTHORIZED') res.setHeader('WWW-Authenticate', 'Bearer');
  sendJson(res, err.status, errorBody(err.code, err.message, err.details));
}

/** Redis or InfluxDB could not be reached or answered with a server error. */
export function isDependencyDown(err: unknown): boolean {
  if (err instanceof InfluxError) return err.status >= 500 || err.status === 0;
  if (!(err instanceof Error)) return false;
  if (err.name === 'TimeoutError' || err.name === 'AbortError' || err.name === 'MaxRetriesPerRequestError')
    return true;
  if (err instanceof TypeError && err.message === 'fetch failed') return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(code))
    return true;
  return /Connection is closed|Stream isn't writeable|Command timed out|enableOfflineQueue/i.test(
    err.message,
  );
}
