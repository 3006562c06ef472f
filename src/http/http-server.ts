/**
 * A node:http server for an express app, with timeouts short enough that a client cannot hold a
 * connection by sending its request slowly: the head must arrive within `headersTimeoutMs`, the
 * whole request within `requestTimeoutMs` (Node's defaults are 60 s and 300 s).
 */
import { createServer, IncomingMessage, ServerResponse, type RequestListener, type Server } from 'node:http';

export interface HttpTimeouts {
  headersTimeoutMs: number;
  requestTimeoutMs: number;
}

/** How often Node checks the timeouts above (its default, 30 s, would make them that coarse). */
const TIMEOUT_CHECK_MS = 1000;

/** An express app is a request listener with the prototypes it gives every request and response. */
type Listener = RequestListener & { request?: object; response?: object };

export function createHttpServer(app: Listener, timeouts: HttpTimeouts): Server {
  return createServer(
    {
      headersTimeout: timeouts.headersTimeoutMs,
      requestTimeout: Math.max(timeouts.requestTimeoutMs, timeouts.headersTimeoutMs),
      connectionsCheckingInterval: TIMEOUT_CHECK_MS,
      // Requests and responses made with express's prototypes from the start: express otherwise
      // swaps the prototype of both objects on every request (Object.setPrototypeOf), which gives
      // them a new hidden class each time; on objects that already have it the swap does nothing.
      ...(app.request && app.response
        ? {
            IncomingMessage: withPrototype(IncomingMessage, app.request) as typeof IncomingMessage,
            ServerResponse: withPrototype(ServerResponse, app.response) as typeof ServerResponse,
          }
        : {}),
    },
    app,
  );
}

/**
 * A constructor that builds what `Base` builds, with `prototype` (which must inherit from Base's).
 * Node calls these with one argument (the request's socket) or two (the request and options).
 */
function withPrototype(Base: new (a: never, b: never) => object, prototype: object): unknown {
  function Made(a: never, b: never): object {
    return Reflect.construct(Base, [a, b], Made) as object;
  }
  Made.prototype = prototype;
  return Made;
}
