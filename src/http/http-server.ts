/**
 * A node:http server for an express app, with timeouts short enough that a client cannot hold a
 * connection by sending its request slowly: the head must arrive within `headersTimeoutMs`, the
 * whole request within `requestTimeoutMs` (Node's defaults are 60 s and 300 s).
 */
import { createServer, type RequestListener, type Server } from 'node:http';

/** The slow-client limits of an HTTP server, in ms. */
export interface HttpTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

/** How often Node checks the timeouts above (its default, 30 s, would make them that coarse). */
const TIMEOUT_CHECK_MS = 1000;

/** A server for `app` (an express app or any request listener) with the limits of `timeouts`. */
export function createHttpServer(app: RequestListener, timeouts: HttpTimeouts): Server {
  return createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: Math.max(timeouts.requestTimeoutMs, timeouts.headersTimeoutMs),
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
    },
    app,
  );
}
