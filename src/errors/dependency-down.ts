/**
 * Whether an error means that Redis or InfluxDB could not be reached or answered with a server
 * error — a fault of the infrastructure, retried by the queue and shown to HTTP clients as
 * 503 UNAVAILABLE — rather than a fault of the request or of Vigil.
 */

/** Socket error codes of a server that is down, restarting or unreachable. */
const NETWORK_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENOTFOUND']);

/**
 * ioredis rejects commands on a closed or not-yet-writable connection, and commands past their
 * timeout, with plain Errors that carry neither a class nor a code; these are their messages
 * (ioredis's own constants, e.g. CONNECTION_CLOSED_ERROR_MSG, are not part of its public API).
 */
const IOREDIS_UNAVAILABLE = /^(Connection is closed\.|Stream isn't writeable|Command timed out)/;

export function isDependencyDown(err: unknown): boolean {
  if (!(err instanceof Error)) return false;
  // Adapters mark their own failures (InfluxError: no answer, or a 5xx).
  const { outage } = err as { outage?: unknown };
  if (typeof outage === 'boolean') return outage;
  // MaxRetriesPerRequestError (ioredis), AbortError (ioredis on a connection closed mid-command,
  // fetch on a timeout), TimeoutError (AbortSignal.timeout).
  if (['MaxRetriesPerRequestError', 'AbortError', 'TimeoutError'].includes(err.name)) return true;
  const code = (err as { code?: unknown }).code;
  if (typeof code === 'string' && NETWORK_CODES.has(code)) return true;
  if (err instanceof TypeError && err.cause !== undefined) return isDependencyDown(err.cause);
  return IOREDIS_UNAVAILABLE.test(err.message);
}
