/**
 * The read API: the published endpoints (devices, data points, export, events), login, the
 * ingestion log and the OpenAPI document. Every endpoint answers GET and POST and takes its
 * attributes from a JSON body (whatever its Content-Type), query parameters, or a JSON object
 * forming the whole query string (request-params.ts); answers are `{"status":"success","data":…}`
 * or the shared error envelope. Paths match in any case, with or without a trailing slash.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { Histogram, type Registry } from 'prom-client';
import { AppError } from '../errors/app-error.ts';
import { createExpressApp } from '../http/create-app.ts';
import type { Scope, TokenRecord } from '../tenancy/types.ts';
import { errorHandler, methodNotAllowed, notFound } from '../http/error-handling.ts';
import { alarmRoutes } from './alarms-routes.ts';
import { STREAMED, type ApiDeps, type ApiRoute } from './api-route.ts';
import { parseAttributes } from './attributes.ts';
import { createBearerAuth } from './bearer-auth.ts';
import { deviceRoutes } from './devices-routes.ts';
import { eventRoutes } from './events-routes.ts';
import { exportRoutes } from './export-route.ts';
import { ingestLogRoutes } from './ingest-log-route.ts';
import { loginRoutes } from './login-route.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { collectAttributes, parseQuery } from './request-params.ts';
import { sensorRoutes } from './sensors-routes.ts';

export type { ApiDeps } from './api-route.ts';

/** Largest accepted request body (a 1,000-item batch is ~100 KB). */
const BODY_LIMIT = '2mb';

/** Answers carry tokens and current values: nothing of them belongs in a cache. */
const NO_STORE = 'no-store';

const noStore: RequestHandler = (_req, res, next) => {
  res.setHeader('Cache-Control', NO_STORE);
  next();
};

/**
 * The read API as an express app. `alongside` are routers of other paths served on the same port
 * (the ops routes and the web console): they are mounted after the API's own routes, so that a
 * request to the API never passes through them, and before the 404.
 */
export function createApiApp(deps: ApiDeps, alongside: RequestHandler[] = []): express.Express {
  const app = createExpressApp();
  // Attributes are read from the raw query string (request-params.ts), not express's parser.
  app.set('query parser', false);
  app.set('trust proxy', deps.config.trustProxy);
  const clock = deps.clock ?? Date.now;
  const auth = createBearerAuth({
    tenancy: deps.tenancy,
    cacheMs: deps.config.credentialCacheMs,
    log: deps.log,
  });
  // The body as text in its declared charset, whatever its Content-Type: JSON comes as curl's form
  // type too, and request-params.ts decides what the text is.
  const readText = express.text({ type: () => true, limit: BODY_LIMIT });
  // Cache-Control first, so that an unreadable or oversized body is refused with it too.
  const prepare: RequestHandler = (req, res, next) => {
    res.setHeader('Cache-Control', NO_STORE);
    readText(req, res, next);
  };
  /** A route whose body is data: read as text up to its own limit, whatever its Content-Type. */
  const prepareRaw = (limit: string): RequestHandler => {
    const readBody = express.text({ type: () => true, limit });
    return (req, res, next) => {
      res.setHeader('Cache-Control', NO_STORE);
      readBody(req, res, next);
    };
  };
  const observe = requestTimer(deps.metrics);

  const routes = apiRoutes(deps);
  // Express tries routes in the order they were added, so the data reads come first.
  for (const route of [...routes].sort((a, b) => mountOrder(a) - mountOrder(b))) {
    const run = runRoute(route);
    const read = route.rawBody ? prepareRaw(route.rawBody.limit) : prepare;
    for (const path of route.paths) {
      const r = app.route(path);
      if (route.methods.includes('GET')) r.get(read, run);
      if (route.methods.includes('POST')) r.post(read, run);
      r.all(noStore, methodNotAllowed(route.methods, path));
    }
  }
  const openApiDocument = buildOpenApiDocument(routes);
  app.get('/openapi.json', (_req, res) => {
    res.setHeader('Cache-Control', NO_STORE);
    res.json(openApiDocument);
  });
  // A path parameter that is not valid percent-encoding fails while the routes above are matched,
  // before any of their handlers ran.
  app.use((err: unknown, _req: Request, res: Response, next: NextFunction) => {
    res.setHeader('Cache-Control', NO_STORE);
    next(err);
  });
  for (const handler of alongside) app.use(handler);
  app.use(noStore, notFound);
  app.use(errorHandler(deps.log));
  return app;

  function runRoute(route: ApiRoute) {
    const name = route.paths[0] ?? '';
    return async (req: Request, res: Response): Promise<void> => {
      const stop = observe(name);
      res.once('finish', () => stop(res.statusCode));
      const nowMs = clock();
      let token: TokenRecord | null = null;
      if (route.auth) {
        const found = auth.authenticate(req, nowMs);
        token = found instanceof Promise ? await found : found;
      }
      if (token && !token.scopes.includes(route.scope)) throw forbidden(token, route.scope);
      const env = token?.env ?? '';
      const body: unknown = req.body;
      const url = req.originalUrl;
      const mark = url.indexOf('?');
      const text = typeof body === 'string' ? body : '';
      const query = mark < 0 ? '' : url.slice(mark + 1);
      const attrs = parseAttributes(
        route.attributes,
        route.rawBody ? parseQuery(query) : collectAttributes(query, text, req.headers['content-type']),
      );
      // Named parameters only (`/login/:apiKey`), never wildcards: each is one string.
      const params = req.params as Record<string, string>;
      const data = await route.handle({
        env,
        token,
        attrs,
        nowMs,
        params,
        // Routes that need the client's address read req.ip themselves: a getter here would keep
        // every request alive past young-generation collections (see the lint rule's reason).
        req,
        res,
        ...(route.rawBody ? { body: { text, contentType: req.headers['content-type'] } } : {}),
      });
      if (data === STREAMED) return;
      if (route.answer?.csv) res.type('text/csv').send(data);
      else res.json({ status: 'success', data });
    };
  }
}

/** FORBIDDEN: the token lacks the scope the endpoint needs. */
function forbidden(token: TokenRecord, scope: Scope): AppError {
  const who =
    token.kind === 'login'
      ? `the user's role allows ${token.scopes.join(',') || 'nothing'}`
      : `the token has scope ${token.scopes.join(',') || 'none'}`;
  return new AppError('FORBIDDEN', `This endpoint needs scope ${scope}; ${who}.`);
}

/** Every route of the read API, as mounted (and described in the OpenAPI document). */
export function apiRoutes(deps: ApiDeps): ApiRoute[] {
  return [
    ...loginRoutes(deps),
    ...deviceRoutes(deps),
    ...sensorRoutes(deps),
    ...exportRoutes(deps),
    ...eventRoutes(deps),
    ...alarmRoutes(deps),
    ...ingestLogRoutes(deps),
    ...(deps.moreRoutes ?? []),
  ];
}

/** Data points and devices are what clients poll; everything else is asked for now and then. */
const FREQUENT_FIRST = ['/sensors/', '/devices/', '/alarms/', '/events/'];

function mountOrder(route: ApiRoute): number {
  const path = route.paths[0] ?? '';
  const rank = FREQUENT_FIRST.findIndex((prefix) => path.startsWith(prefix));
  return rank < 0 ? FREQUENT_FIRST.length : rank;
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
