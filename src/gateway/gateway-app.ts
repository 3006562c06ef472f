/**
 * The HTTP ingestion gateway: six POST paths, and one per LoRaWAN network server (`/tts/<KEY>`,
 * `/chirpstack/<KEY>?event=`), the API key as the last path segment. The key is
 * checked before the body is read (an unknown key costs no body), the body is read as bytes
 * whatever its Content-Type (express.raw, which also inflates gzip, deflate, br and zstd, and
 * applies VIGIL_BODY_LIMIT_BYTES to the inflated size), and the answer is 202 only once the
 * payload is in the queue. Every refusal is the shared error envelope with a catalogue code.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Config } from '../config/schema.ts';
import { AppError } from '../errors/app-error.ts';
import type { IngestService } from '../ingest/ingest-service.ts';
import type { ApiKeyInfo } from '../ingest/api-keys.ts';
import type { Logger } from '../log/logger.ts';
import { createExpressApp } from '../http/create-app.ts';
import { errorHandler, expressError, methodNotAllowed, notFound } from '../http/error-handling.ts';
import {
  GATEWAY_KINDS,
  GATEWAY_PATHS,
  isJsonGateway,
  isNetworkServer,
  type IngestGateway,
} from '../domain/ingest-item.ts';
import { NETWORK_SERVERS } from '../domain/network-messages.ts';

export interface GatewayAppDeps {
  config: Pick<Config, 'bodyLimitBytes'>;
  log: Logger;
  ingest: IngestService;
}

/** What a request's handlers hand on to the next in `res.locals`. */
interface GatewayLocals {
  kind: IngestGateway;
  key: ApiKeyInfo;
  deviceName: string | undefined;
}

export function createGatewayApp(deps: GatewayAppDeps): express.Express {
  const { ingest, config } = deps;
  const app = createExpressApp();
  const readRaw = express.raw({ type: () => true, limit: config.bodyLimitBytes });

  for (const kind of [...GATEWAY_KINDS, ...NETWORK_SERVERS]) {
    const path = isNetworkServer(kind) ? kind : GATEWAY_PATHS[kind];
    app
      .route(`/${path}/:key`)
      .post(authenticate(kind), readBody, submit)
      .all(methodNotAllowed(['POST'], `/${path}/<API_KEY>`));
  }
  app.use(notFound);
  app.use(errorHandler(deps.log));
  return app;

  function authenticate(kind: IngestGateway): RequestHandler {
    return async (req, res, next) => {
      const key = await ingest.authenticate(String(req.params.key), 'http', kind);
      const locals: GatewayLocals = { kind, key, deviceName: deviceNameOf(kind, req) };
      Object.assign(res.locals, locals);
      next();
    };
  }

  /** express.raw, with a body it refuses recorded (counted, and in the ingestion log) like any refusal. */
  function readBody(req: Request, res: Response, next: NextFunction): void {
    readRaw(req, res, (err?: unknown) => {
      if (err === undefined) {
        next();
        return;
      }
      const refusal = expressError(err);
      if (refusal === undefined) {
        next(err);
        return;
      }
      const { kind, key, deviceName } = res.locals as GatewayLocals;
      const message =
        refusal.code === 'PAYLOAD_TOO_LARGE'
          ? `The body exceeds ${config.bodyLimitBytes} bytes.`
          : refusal.message;
      ingest.recordRefusal(
        { kind, via: 'http', key, ...(deviceName === undefined ? {} : { deviceName }) },
        { code: refusal.code, message },
      );
      next(new AppError(refusal.code, message));
    });
  }

  async function submit(req: Request, res: Response): Promise<void> {
    const { kind, key, deviceName } = res.locals as GatewayLocals;
    const body: unknown = req.body;
    const event = kind === 'chirpstack' ? eventOf(req) : undefined;
    const { id, ignored } = await ingest.accept({
      kind,
      via: 'http',
      key,
      body: Buffer.isBuffer(body) ? body : Buffer.alloc(0),
      client: req.socket.remoteAddress ?? '',
      ...(deviceName === undefined ? {} : { deviceName }),
      ...(event === undefined ? {} : { event }),
    });
    // A network server's message that is not data is taken (so the server does not retry it), not queued.
    if (ignored) res.status(200).json({ status: 'success', data: { id, ignored: true } });
    else res.status(202).json({ status: 'success', data: { id } });
  }
}

/** ChirpStack's `?event=` (the HTTP integration posts every event type to one URL). */
function eventOf(req: Request): string | undefined {
  const event: unknown = (req.query as Record<string, unknown>).event;
  return typeof event === 'string' ? event : undefined;
}

/**
 * `?deviceName=` on the raw paths (the JSON paths take it from the body or the pre-parser). Given
 * twice it is an array, not a name, and is ignored.
 */
function deviceNameOf(kind: IngestGateway, req: Request): string | undefined {
  if (isJsonGateway(kind)) return undefined;
  const name: unknown = (req.query as Record<string, unknown>).deviceName;
  return typeof name === 'string' ? name : undefined;
}
