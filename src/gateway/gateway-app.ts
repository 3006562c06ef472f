/**
 * The HTTP ingestion gateway: six POST paths, the API key as the last path segment. The key is
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
import { GATEWAY_KINDS, GATEWAY_PATHS, isJsonGateway, type GatewayKind } from '../domain/ingest-item.ts';

export interface GatewayAppDeps {
  config: Pick<Config, 'bodyLimitBytes'>;
  log: Logger;
  ingest: IngestService;
}

/** What a request's handlers hand on to the next in `res.locals`. */
interface GatewayLocals {
  kind: GatewayKind;
  key: ApiKeyInfo;
  deviceName: string | undefined;
}

export function createGatewayApp(deps: GatewayAppDeps): express.Express {
  const { ingest, config } = deps;
  const app = createExpressApp();
  const readRaw = express.raw({ type: () => true, limit: config.bodyLimitBytes });

  for (const kind of GATEWAY_KINDS) {
    const path = `/${GATEWAY_PATHS[kind]}/:key`;
    app
      .route(path)
      .post(authenticate(kind), readBody, submit)
      .all(methodNotAllowed(['POST'], `/${GATEWAY_PATHS[kind]}/<API_KEY>`));
  }
  app.use(notFound);
  app.use(errorHandler(deps.log));
  return app;

  function authenticate(kind: GatewayKind): RequestHandler {
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
        refusal.code === 'PAYLOAD_TOO_LARGE' ? `The body exceeds ${config.bodyLimitBytes} bytes.` : refusal.message;
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
    const id = await ingest.submit({
      kind,
      via: 'http',
      key,
      body: Buffer.isBuffer(body) ? body : Buffer.alloc(0),
      client: req.socket.remoteAddress ?? '',
      ...(deviceName === undefined ? {} : { deviceName }),
    });
    res.status(202).json({ status: 'success', data: { id } });
  }
}

/**
 * `?deviceName=` on the raw paths (the JSON paths take it from the body or the pre-parser). Given
 * twice it is an array, not a name, and is ignored.
 */
function deviceNameOf(kind: GatewayKind, req: Request): string | undefined {
  if (isJsonGateway(kind)) return undefined;
  const name: unknown = (req.query as Record<string, unknown>).deviceName;
  return typeof name === 'string' ? name : undefined;
}
