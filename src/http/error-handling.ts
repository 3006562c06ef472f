/**
 * How failures reach a client on both HTTP surfaces: every answer that is not a success is the
 * catalogue envelope `{"status":"error","error":{"code","message",…}}`. AppErrors keep their code,
 * status, details and Retry-After; what express and body-parser raise (an oversized or unreadable
 * body, a path that is not valid percent-encoding) becomes its catalogue code; an unreachable Redis
 * or InfluxDB becomes 503 UNAVAILABLE; anything else 500 INTERNAL with a generic message, the error
 * itself going to the log only. Never a stack trace or an internal message.
 */
import type { ErrorRequestHandler, RequestHandler, Response } from 'express';
import { AppError, errorBody, isAppError } from '../errors/app-error.ts';
import { isDependencyDown } from '../errors/dependency-down.ts';
import type { Logger } from '../log/logger.ts';

/** Sends an AppError as the envelope, with Retry-After (and WWW-Authenticate for 401 UNAUTHORIZED). */
export function sendAppError(res: Response, err: AppError): void {
  if (res.headersSent) {
    // A streamed answer failed half-way: the client sees the connection cut, not a corrupt body.
    res.destroy();
    return;
  }
  if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  else if (err.status === 503) res.setHeader('Retry-After', '1');
  if (err.code === 'UNAUTHORIZED') res.setHeader('WWW-Authenticate', 'Bearer');
  res.status(err.status).json(errorBody(err.code, err.message, err.details));
}

/**
 * The AppError a client sees for any thrown value. Faults (5xx) are logged with `context`, which
 * must not carry secrets (log a path, never a URL with its query or key).
 */
export function toClientError(err: unknown, log: Logger, context: Record<string, unknown>): AppError {
  if (isAppError(err)) {
    if (err.status >= 500 && err.code !== 'UNAVAILABLE' && err.code !== 'BACKLOG_FULL')
      log.error({ err, ...context }, 'request fault');
    return err;
  }
  const fromExpress = expressError(err);
  if (fromExpress) return fromExpress;
  if (isDependencyDown(err)) {
    log.warn({ err, ...context }, 'a storage server is unavailable');
    return new AppError('UNAVAILABLE', 'A storage server is unavailable; try again shortly.', {
      retryAfterSeconds: 1,
    });
  }
  log.error({ err, ...context }, 'request fault');
  return new AppError('INTERNAL', 'Internal error.');
}

/**
 * The catalogue code of an error raised by body-parser (its `type`) or by the router (a path
 * parameter that is not valid percent-encoding: a URIError with status 400).
 */
export function expressError(err: unknown): AppError | undefined {
  if (typeof err !== 'object' || err === null) return undefined;
  const { type, status } = err as { type?: unknown; status?: unknown };
  switch (type) {
    case 'entity.too.large':
      return new AppError('PAYLOAD_TOO_LARGE', 'The body is larger than this path accepts.');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError(
        'UNSUPPORTED_ENCODING',
        'The body has a Content-Encoding or charset this service does not read.',
      );
    case 'request.aborted':
    case 'request.size.invalid':
      return new AppError('INVALID_JSON', 'The body could not be read (aborted or cut short).');
    default:
      break;
  }
  if (err instanceof URIError && status === 400)
    return new AppError('BAD_REQUEST', 'The path is not valid percent-encoding.');
  // A compressed body that does not decompress (body-parser passes zlib's error on with status 400).
  if (status === 400 && typeof (err as { code?: unknown }).code === 'string')
    return new AppError('INVALID_JSON', 'The body could not be read (a corrupt compressed body).');
  return undefined;
}

/** The last middleware of an app: every error as the envelope. */
export function errorHandler(log: Logger): ErrorRequestHandler {
  return (err: unknown, req, res, _next) => {
    // The path alone: a query may carry attributes such as a password, a path segment an API key
    // (the gateway's routes are logged by name, not by path).
    sendAppError(res, toClientError(err, log, { route: routeName(req.route) }));
  };
}

/** 404 NOT_FOUND for any path no route answered. */
export const notFound: RequestHandler = (_req, res) => {
  sendAppError(res, new AppError('NOT_FOUND', 'No such path.'));
};

/** 405 METHOD_NOT_ALLOWED with Allow, for a path that exists with other methods. */
export function methodNotAllowed(methods: readonly string[], shownPath: string): RequestHandler {
  const allow = methods.join(', ');
  const message = `Use ${methods.join(' or ')} on ${shownPath}.`;
  return (_req, res) => {
    res.setHeader('Allow', allow);
    sendAppError(res, new AppError('METHOD_NOT_ALLOWED', message));
  };
}

function routeName(route: unknown): string | undefined {
  const path = (route as { path?: unknown } | undefined)?.path;
  return typeof path === 'string' ? path : undefined;
}
