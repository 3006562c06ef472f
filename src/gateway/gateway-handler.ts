/**
 * The HTTP ingestion gateway (PRODUCT.md §6): six POST paths, the API key as the last path
 * segment, the body read as bytes whatever its Content-Type. Answers 202 only once the payload is
 * in the queue; every refusal is the shared error envelope with a catalogue code.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import type { Config } from '../config/schema.ts';
import { errorBody, isAppError, type AppError } from '../errors/app-error.ts';
import { ERROR_CODES, type ErrorCode } from '../errors/catalogue.ts';
import type { Logger } from '../log/logger.ts';
import type { IngestService } from '../ingest/ingest-service.ts';
import { GATEWAY_KINDS, GATEWAY_PATHS, isJsonGateway, type GatewayKind } from '../queue/jobs.ts';

export interface GatewayAppDeps {
  config: Config;
  log: Logger;
  ingest: IngestService;
}

type Middleware = (req: Request, res: Response, next: (err?: unknown) => void) => void;

export function createGatewayApp(deps: GatewayAppDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.disable('etag');
  const readRaw = express.raw({ type: () => true, limit: deps.config.bodyLimitBytes });
  for (const kind of GATEWAY_KINDS) {
    app.all(`/${GATEWAY_PATHS[kind]}/:key`, (req, res) => handleSubmission(deps, readRaw, kind, req, res));
  }
  app.use((_req: Request, res: Response) => {
    sendError(res, 'NOT_FOUND', 'No such path.');
  });
  app.use((err: unknown, _req: Request, res: Response, _next: NextFunction) => {
    // Only routing faults reach here (e.g. a key segment that is not valid percent-encoding).
    const status = (err as { status?: unknown }).status;
    if (typeof status === 'number' && status >= 400 && status < 500)
      sendError(res, 'NOT_FOUND', 'No such path.');
    else {
      deps.log.error({ err }, 'gateway fault');
      sendError(res, 'INTERNAL', 'Internal error.');
    }
  });
  return app;
}

async function handleSubmission(
  deps: GatewayAppDeps,
  readRaw: Middleware,
  kind: GatewayKind,
  req: Request,
  res: Response,
): Promise<void> {
  if (req.method !== 'POST') {
    res.setHeader('Allow', 'POST');
    sendError(res, 'METHOD_NOT_ALLOWED', `Use POST on /${GATEWAY_PATHS[kind]}/<API_KEY>.`);
    return;
  }
  try {
    const key = await deps.ingest.authenticate(String(req.params.key), 'http', kind);
    const body = await readBody(readRaw, req, res);
    if (typeof body === 'string') {
      const message = bodyErrorMessage(body, deps.config);
      deps.ingest.recordRefusal(
        { kind, via: 'http', key, ...deviceNameFromQuery(kind, req) },
        { code: body, message },
      );
      sendError(res, body, message);
      return;
    }
    const id = await deps.ingest.submit({
      kind,
      via: 'http',
      key,
      body,
      client: req.socket.remoteAddress ?? '',
      ...deviceNameFromQuery(kind, req),
    });
    res.status(202).json({ status: 'success', data: { id } });
  } catch (err) {
    if (isAppError(err)) sendAppError(res, err);
    else {
      deps.log.error({ err, gateway: kind }, 'gateway fault');
      sendError(res, 'INTERNAL', 'Internal error.');
    }
  }
}

/** The body as bytes, or the code of why it could not be read. */
async function readBody(readRaw: Middleware, req: Request, res: Response): Promise<Buffer | ErrorCode> {
  const failure = await new Promise<unknown>((resolve) => readRaw(req, res, resolve));
  if (failure !== undefined) {
    const type = (failure as { type?: unknown }).type;
    return type === 'entity.too.large' ? 'PAYLOAD_TOO_LARGE' : 'INVALID_JSON';
  }
  const body: unknown = req.body;
  return Buffer.isBuffer(body) ? body : Buffer.alloc(0);
}

function bodyErrorMessage(code: ErrorCode, config: Config): string {
  return code === 'PAYLOAD_TOO_LARGE'
    ? `The body exceeds ${config.bodyLimitBytes} bytes.`
    : 'The body could not be read (aborted, or an unsupported Content-Encoding).';
}

/** `?deviceName=` on the raw paths (the JSON paths take it from the body or the pre-parser). */
function deviceNameFromQuery(kind: GatewayKind, req: Request): { deviceName?: string } {
  if (isJsonGateway(kind)) return {};
  const name = (req.query as Record<string, unknown>).deviceName;
  return typeof name === 'string' ? { deviceName: name } : {};
}

function sendAppError(res: Response, err: AppError): void {
  if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  else if (err.status === 503) res.setHeader('Retry-After', '1');
  res.status(err.status).json(errorBody(err.code, err.message));
}

function sendError(res: Response, code: ErrorCode, message: string): void {
  res.status(statusOf(code)).json(errorBody(code, message));
}

const statusOf = (code: ErrorCode): number => ERROR_CODES[code].status;
