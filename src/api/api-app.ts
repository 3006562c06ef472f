/**
 * The read API (spec/interface.md endpoints 1–9, PRODUCT.md §10): an express app whose routes
 * answer GET and POST, take their attributes from a JSON body, query parameters or a whole-query
 * JSON object, and answer `{"status":"success","data":…}` or the shared error envelope. Ops routes
 * (/healthz, /readyz, /metrics) are mounted by the caller before this app.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { Histogram, type Registry } from 'prom-client';
import { AppError } from '../errors/app-error.ts';
import { toClientError, sendError } from './api-errors.ts';
import { STREAMED, type ApiDeps, type ApiRoute } from './api-route.ts';
import { createBearerAuth } from './bearer-auth.ts';
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
const BODY_LIMIT = '2mb';

export function createApiApp(deps: ApiDeps): express.Express {
  const app = express();
  app.disable('x-powered-by');
  // No ETag: it hashes every answer, and these answers change with every reading (POST answers are
  // not cached at all).
  app.set('etag', false);
  app.set('query parser', false);
  const clock = deps.clock ?? Date.now;
  const auth = createBearerAuth({ tenancy: deps.tenancy, cacheMs: deps.config.credentialCacheMs });
  const readBody = express.text({ type: () => true, limit: BODY_LIMIT });
  const observe = requestTimer(deps.metrics);

  const routes: ApiRoute[] = [
    ...loginRoutes(deps),
    ...deviceRoutes(deps),
    ...sensorRoutes(deps),
    ...exportRoutes(deps),
    ...eventRoutes(deps),
    ...ingestLogRoutes(deps),
  ];

  app.get('/openapi.json', (_req, res) => {
    res.json(OPENAPI_DOCUMENT);
  });
  for (const route of routes) {
    for (const path of route.paths) {
      app.all(path, (req: Request, res: Response, next: NextFunction) => {
        if (!(route.methods as string[]).includes(req.method)) {
          res.setHeader('Allow', route.methods.join(', '));
          sendError(res, new AppError('METHOD_NOT_ALLOWED', `Use ${route.methods.join(' or ')} on ${path}.`));
          return;
        }
        next();
      });
      app.all(path, readBody, (req: Request, res: Response) => {
        const stop = observe(route.paths[0] ?? path);
        void handle(route, req, res).finally(() => stop(res.statusCode));
      });
    }
  }
  app.use((_req: Request, res: Response) => {
    sendError(res, new AppError('NOT_FOUND', 'No such path.'));
  });
  app.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    sendError(res, toClientError(err, deps.log, { path: req.path }));
  });
  return app;

  async function handle(route: ApiRoute, req: Request, res: Response): Promise<void> {
    try {
      const nowMs = clock();
      const env = route.auth ? (await auth.authenticate(req.headers.authorization, nowMs)).env : '';
      const body = typeof req.body === 'string' ? req.body : '';
      const rawQuery = req.originalUrl.includes('?')
        ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1)
        : '';
      const attrs = collectAttributes(rawQuery, body, req.headers['content-type']);
      const data = await route.handle({ env, attrs, nowMs, req, res });
      if (data !== STREAMED) res.json({ status: 'success', data });
    } catch (err) {
      sendError(res, toClientError(err, deps.log, { path: req.path }));
    }
  }
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
