/**
 * The HTTP ingestion gateway (PRODUCT.md §6): six POST paths, the API key as the last path
 * segment, the body read as bytes whatever its Content-Type. Answers 202 only once the payload is
 * in the queue; every refusal is the shared error envelope with a catalogue code.
 *
 * Bare node:http rather than express: the gateway is one route shape and one body reader, and
 * express's layers cost it a quarter of its throughput (issue #9). gateway-route.ts and
 * read-body.ts keep what express and body-parser did, so devices see no difference.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Config } from '../config/schema.ts';
import { errorBody, isAppError, type AppError } from '../errors/app-error.ts';
import { ERROR_CODES, type ErrorCode } from '../errors/catalogue.ts';
import { sendJson } from '../http/send-json.ts';
import type { Logger } from '../log/logger.ts';
import type { IngestService } from '../ingest/ingest-service.ts';
import { GATEWAY_PATHS, isJsonGateway } from '../queue/jobs.ts';
import { deviceNameFromQuery, matchGatewayRoute, type GatewayRoute } from './gateway-route.ts';
import { readBody, type BodyFailure } from '../http/read-body.ts';

export interface GatewayHandlerDeps {
  config: Config;
  log: Logger;
  ingest: IngestService;
}

export type RequestHandler = (req: IncomingMessage, res: ServerResponse) => void;

/** The gateway as a node:http request listener. */
export function createGatewayHandler(deps: GatewayHandlerDeps): RequestHandler {
  return (req, res) => {
    const route = matchGatewayRoute(req.url ?? '/');
    if (route === undefined) {
      sendError(res, 'NOT_FOUND', 'No such path.');
    } else if (req.method !== 'POST') {
      res.setHeader('Allow', 'POST');
      sendError(res, 'METHOD_NOT_ALLOWED', `Use POST on /${GATEWAY_PATHS[route.kind]}/<API_KEY>.`);
    } else {
      handleSubmission(deps, route, req, res).catch((err: unknown) => {
        deps.log.error({ err, gateway: route.kind }, 'gateway fault after answering');
      });
    }
  };
}

/** Authenticates, reads the body and queues it; every failure is answered with its code. */
async function handleSubmission(
  deps: GatewayHandlerDeps,
  { kind, key: apiKey, query }: GatewayRoute,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  // The JSON paths take the device name from the body or the pre-parser, never from the query.
  const deviceName = isJsonGateway(kind) ? undefined : deviceNameFromQuery(query);
  const named = deviceName === undefined ? {} : { deviceName };
  try {
    const key = await deps.ingest.authenticate(apiKey, 'http', kind);
    const body = await readBody(req, res, deps.config.bodyLimitBytes);
    if (typeof body === 'string') {
      const message = bodyErrorMessage(body, deps.config);
      deps.ingest.recordRefusal({ kind, via: 'http', key, ...named }, { code: body, message });
      sendError(res, body, message);
      return;
    }
    const client = req.socket.remoteAddress ?? '';
    const id = await deps.ingest.submit({ kind, via: 'http', key, body, client, ...named });
    sendJson(res, 202, { status: 'success', data: { id } });
  } catch (err) {
    if (isAppError(err)) sendAppError(res, err);
    else {
      deps.log.error({ err, gateway: kind }, 'gateway fault');
      sendError(res, 'INTERNAL', 'Internal error.');
    }
  }
}

function bodyErrorMessage(code: BodyFailure, config: Config): string {
  return code === 'PAYLOAD_TOO_LARGE'
    ? `The body exceeds ${config.bodyLimitBytes} bytes.`
    : 'The body could not be read (aborted, or an unsupported Content-Encoding).';
}

function sendAppError(res: ServerResponse, err: AppError): void {
  if (err.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(err.retryAfterSeconds));
  else if (err.status === 503) res.setHeader('Retry-After', '1');
  sendJson(res, err.status, errorBody(err.code, err.message));
}

function sendError(res: ServerResponse, code: ErrorCode, message: string): void {
  sendJson(res, ERROR_CODES[code].status, errorBody(code, message));
}
