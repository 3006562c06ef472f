/**
 * The read API (spec/interface.md endpoints 1–9, PRODUCT.md §10): routes that answer GET and POST,
 * take their attributes from a JSON body, query parameters or a whole-query JSON object, and answer
 * `{"status":"success","data":…}` or the shared error envelope. Ops routes (/healthz, /readyz,
 * /metrics) are answered by the caller before this handler.
 *
 * A node:http handler rather than an express app, as the gateway is: the API is a dozen fixed paths
 * and one body reader, and express's router (a regular expression per layer, two layers per path),
 * body-parser and response helpers took a sixth of a sensors/details request's CPU. Paths match as
 * express matched them — case-insensitive, with or without one trailing slash — and bodies are
 * read as express.text read them (read-body.ts, 2 MB).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Histogram, type Registry } from 'prom-client';
import { AppError } from '../errors/app-error.ts';
import { sendJson } from '../http/send-json.ts';
import { readBody } from '../http/read-body.ts';
import { toClientError, sendError } from './api-errors.ts';
import { STREAMED, type ApiDeps, type ApiRoute } from './api-route.ts';
import { createBearerAuth } from './bearer-auth.ts';
import { clientAddress } from './client-address.ts';
import { deviceRoutes } from './devices-routes.ts';
import { eventRoutes } from './events-routes.ts';
import { exportRoutes } from './export-route.ts';
import { ingestLogRoutes } from './ingest-log-route.ts';
import { loginRoutes } from './login-route.ts';
import { OPENAPI_DOCUMENT } from './openapi.ts';
import { collectAttributes } from './request-params.ts';
import { sensorRoutes } from './sensors-routes.ts';

export type { ApiDeps } from './api-route.ts';

/** Largest accepted request body (a 1,000-item batch is ~100 KB). */
const BODY_LIMIT_BYTES = 2 * 1024 * 1024;

/** The read API as a node:http request listener. */
export type ApiHandler = (req: IncomingMessage, res: ServerResponse) => void;

export function createApiApp(deps: ApiDeps): ApiHandler {
  const clock = deps.clock ?? Date.now;
  const auth = createBearerAuth({ tenancy: deps.tenancy, cacheMs: deps.config.credentialCacheMs });
  const observe = requestTimer(deps.metrics);
  const routes: ApiRoute[] = [
    ...loginRoutes(deps),
    ...deviceRoutes(deps),
    ...sensorRoutes(deps),
    ...exportRoutes(deps),
    ...eventRoutes(deps),
    ...ingestLogRoutes(deps),
  ];
  // Fixed paths by their lower-case form; paths ending in `/:name` by their prefix.
  const fixed = new Map<string, ApiRoute>();
  const prefixed: { prefix: string; param: string; route: ApiRoute }[] = [];
  for (const route of routes) {
    for (const path of route.paths) {
      const at = path.indexOf('/:');
      if (at < 0) fixed.set(path.toLowerCase(), route);
      else
        prefixed.push({ prefix: `${path.slice(0, at + 1).toLowerCase()}`, param: path.slice(at + 2), route });
    }
  }

  function match(path: string): { route: ApiRoute; params: Record<string, string> } | undefined {
    const lower = path.toLowerCase();
    const route = fixed.get(lower);
    if (route) return { route, params: {} };
    for (const p of prefixed) {
      const rest = path.slice(p.prefix.length);
      if (lower.startsWith(p.prefix) && rest !== '' && !rest.includes('/')) {
        return { route: p.route, params: { [p.param]: decodeURIComponent(rest) } };
      }
    }
    return undefined;
  }

  return (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    let path = q < 0 ? url : url.slice(0, q);
    if (path.length > 1 && path.endsWith('/')) path = path.slice(0, -1);
    let found: ReturnType<typeof match>;
    try {
      found = match(path);
    } catch {
      // A path segment that is not valid percent-encoding.
      found = undefined;
    }
    if (!found) {
      if (path.toLowerCase() === '/openapi.json' && req.method === 'GET')
        sendJson(res, 200, OPENAPI_DOCUMENT);
      else sendError(res, new AppError('NOT_FOUND', 'No such path.'));
      return;
    }
    const { route, params } = found;
    if (!(route.methods as string[]).includes(req.method ?? '')) {
      res.setHeader('Allow', route.methods.join(', '));
      sendError(res, new AppError('METHOD_NOT_ALLOWED', `Use ${route.methods.join(' or ')} on ${path}.`));
      return;
    }
    const stop = observe(route.paths[0] ?? path);
    void handle(route, params, req, res, path, q < 0 ? '' : url.slice(q + 1)).finally(() =>
      stop(res.statusCode),
    );
  };

  async function handle(
    route: ApiRoute,
    params: Record<string, string>,
    req: IncomingMessage,
    res: ServerResponse,
    path: string,
    rawQuery: string,
  ): Promise<void> {
    try {
      // The body first, as before: an oversized body is refused as such, whatever the token.
      const body = await readText(req, res);
      const nowMs = clock();
      const env = route.auth ? (await auth.authenticate(req.headers.authorization, nowMs)).env : '';
      const attrs = collectAttributes(rawQuery, body, req.headers['content-type']);
      const client = clientAddress(req, deps.config.trustProxy);
      const data = await route.handle({ env, attrs, nowMs, params, clientAddress: client, req, res });
      if (data !== STREAMED) sendJson(res, 200, { status: 'success', data });
    } catch (err) {
      // The path alone: a query can carry attributes such as a login's password.
      sendError(res, toClientError(err, deps.log, { path }));
    }
  }
}

/** The body as text in its declared charset (UTF-8 unless latin1 / ASCII is named), as express.text read it. */
async function readText(req: IncomingMessage, res: ServerResponse): Promise<string> {
  const bytes = await readBody(req, res, BODY_LIMIT_BYTES);
  if (bytes === 'PAYLOAD_TOO_LARGE') throw new AppError('PAYLOAD_TOO_LARGE', 'The body is too large.');
  if (bytes === 'INVALID_JSON') throw new AppError('INVALID_JSON', 'The body could not be read.');
  if (bytes.length === 0) return '';
  const charset = /;\s*charset\s*=\s*"?([\w-]+)/i.exec(req.headers['content-type'] ?? '')?.[1]?.toLowerCase();
  if (charset === undefined || charset === 'utf-8' || charset === 'utf8') return bytes.toString('utf8');
  if (charset === 'iso-8859-1' || charset === 'latin1' || charset === 'us-ascii' || charset === 'ascii')
    return bytes.toString('latin1');
  throw new AppError('INVALID_JSON', 'The body could not be read.');
}

/** Times each request into `vigil_api_request_duration_seconds{route,status}`. */
function requestTimer(registry: Registry | undefined) {
  if (!registry) return () => () => undefined;
  const name = 'vigil_api_request_duration_seconds';
  const histogram =
    (registry.getSingleMetric(name) as Histogram<'route' | 'status'> | undefined) ??
    new Histogram({
      name,
      help: 'Read API request duration, by route and HTTP status.',
      labelNames: ['route', 'status'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5, 30],
      registers: [registry],
    });
  return (route: string) => {
    const end = histogram.startTimer({ route });
    return (status: number) => {
      end({ status: String(status) });
    };
  };
}
