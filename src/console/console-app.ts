/**
 * The web console, served by the api role under /console/ (and `GET /` redirects there): sign-in
 * with a server-side session, the fleet, a device, events, the ingestion log, definitions
 * with the parser workbench, and for admins the management pages (devices, API keys, tokens,
 * users, channels and routes, the audit log; a device's rules), whose forms run the management
 * operations (manage-forms.ts). Pages are rendered on the server (escaped by construction, html.ts) and
 * kept current by a server-sent-event stream per page (live.ts); a few small ES modules do the rest.
 * The JSON read API is untouched: the console's router answers only its own paths.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import compression from 'compression';
import { gzipHtml } from './gzip-html.ts';
import { constants } from 'node:zlib';
import { createAlarms } from '../alerting/alarms.ts';
import { AppError } from '../errors/app-error.ts';
import { toClientError } from '../http/error-handling.ts';
import { createLast24HoursReader } from '../history/last-24-hours-reader.ts';
import { loadAssets } from './assets.ts';
import { createLiveHub } from './live.ts';
import { manageAccessRoutes } from './manage-access-routes.ts';
import { manageAlertingRoutes } from './manage-alerting-routes.ts';
import { manageAuditRoutes } from './manage-audit-routes.ts';
import { manageDeviceRoutes } from './manage-device-routes.ts';
import { multipartForm, takeFlash } from './manage-forms.ts';
import { rulesRoutes } from './rules-routes.ts';
import { roleAllows } from '../tenancy/types.ts';
import { pageRoutes } from './page-routes.ts';
import { consoleSecurityHeaders, createCookiePolicy } from './security.ts';
import { createSessionStore } from './sessions.ts';
import { signInRoutes } from './sign-in-routes.ts';
import { definitionRoutes } from './definition-routes.ts';
import { errorBody } from './views/sign-in-view.ts';
import { page } from './views/layout.ts';
import { createWorkbench } from './workbench.ts';
import { createWorkbenchLimits } from './workbench-limits.ts';
import { paths } from './views/format.ts';
import type { ConsoleContext, ConsoleDeps } from './console-context.ts';

export interface WebConsole {
  router: express.Router;
  close(): Promise<void>;
}

/** Largest form accepted (a payload in the workbench). */
const FORM_LIMIT = '1mb';
/** Largest device import the console takes (a file or pasted CSV; the API takes 64 MB). */
const IMPORT_FORM_LIMIT = '16mb';
/** Bounds of a live stream's session check: no busy loop without a credential cache, no long wait with one. */
const MIN_SESSION_CHECK_MS = 250;
const MAX_SESSION_CHECK_MS = 30_000;

export function createConsole(deps: ConsoleDeps): WebConsole {
  const clock = deps.clock ?? Date.now;
  const { config, redis, keys } = deps;
  const live = createLiveHub({
    redis,
    keys,
    log: deps.log,
    intervalMs: config.consoleLiveMs,
    // An open page learns that its session ended elsewhere (a password change, the user deleted) as
    // soon as a cached credential would: within the credential cache time.
    sessionCheckMs: Math.min(MAX_SESSION_CHECK_MS, Math.max(MIN_SESSION_CHECK_MS, config.credentialCacheMs)),
    clock,
  });
  const sessions = createSessionStore({
    redis,
    keys,
    idleMs: config.consoleSessionIdleMinutes * 60_000,
    maxMs: config.consoleSessionMaxHours * 3_600_000,
  });
  const cookies = createCookiePolicy(config.publicUrl);
  const assets = loadAssets();
  const workbench = createWorkbench({
    sandbox: {
      timeoutMs: config.sandboxTimeoutMs,
      memoryLimitMb: config.sandboxMemoryMb,
      maxIsolates: config.sandboxMaxIsolates,
      isolateIdleMs: config.sandboxIsolateIdleMs,
    },
    limits: createWorkbenchLimits({
      redis,
      prefix: keys.prefix,
      perSessionPerMinute: config.workbenchRunsPerMinutePerSession,
      perEnvPerMinute: config.workbenchRunsPerMinutePerEnv,
    }),
    log: deps.log,
  });
  const ctx: ConsoleContext = {
    deps,
    clock,
    sessions,
    cookies,
    live,
    alarms: createAlarms({ redis, keys, tenancy: deps.tenancy, auditRetentionMs: config.auditRetentionDays * 86_400_000 }),
    workbench,
    assets,
    last24Hours: createLast24HoursReader({ influx: deps.influx }),
    render(res, status, o) {
      // A message about the change just made is shown once, by the next page a GET renders.
      const flash = o.session && res.req.method === 'GET' ? takeFlash(ctx, res.req, res) : undefined;
      const manage = o.session !== undefined && deps.management !== undefined && roleAllows(o.session.role, 'admin');
      const markup = page({ ...o, flash: o.flash ?? flash, manage, assets: assets.urls });
      res.status(status).type('html').vary('Accept-Encoding');
      // Pages are gzipped here, their shared parts compressed once (gzip-html.ts); the compression
      // middleware leaves an answer with a Content-Encoding alone.
      const gzip =
        res.req.headers['accept-encoding'] !== undefined && res.req.acceptsEncodings('gzip') === 'gzip';
      if (gzip) res.setHeader('Content-Encoding', 'gzip').send(gzipHtml(markup));
      else res.send(markup.toBuffer());
    },
    sessionOf: (req, opts) => sessions.resolve(cookies.read(req, cookies.sessionName(req)), clock(), opts),
    async requireSession(req, res) {
      const session = await ctx.sessionOf(req);
      if (session) return session;
      if (req.method !== 'GET') throw new AppError('UNAUTHORIZED', 'Your session has ended: sign in again.');
      const next = req.originalUrl.startsWith('/console/') ? req.originalUrl : paths.fleet;
      res.redirect(303, `${paths.signIn}?next=${encodeURIComponent(next)}`);
      return null;
    },
    queryOf: (req) => new URL(req.originalUrl, 'http://console').searchParams,
  };

  const router = express.Router({ caseSensitive: true, strict: false });
  router.get('/', (_req, res) => res.redirect(302, paths.root));
  router.get('/favicon.ico', (_req, res) => assets.serveIco(res));
  const consoleRouter = express.Router({ caseSensitive: true });
  consoleRouter.use(consoleSecurityHeaders);
  consoleRouter.use((_req, res, next) => {
    res.setHeader('Cache-Control', 'no-store');
    next();
  });
  consoleRouter.get('/assets/:name', (req, res, next) => {
    if (!assets.serve(req, res, req.params.name)) next();
  });
  consoleRouter.use(
    compression({
      filter: (req, res) =>
        !String(res.getHeader('Content-Type') ?? '').startsWith('text/event-stream') &&
        compression.filter(req, res),
      // The fastest level: every page is compressed on every request, and a large fleet's page costs
      // several times the CPU at the default level for a little less to send.
      level: constants.Z_BEST_SPEED,
    }),
  );
  // A device import is a larger form, sent as a file upload (multipart) or pasted text.
  consoleRouter.use(
    '/manage/devices/import',
    express.urlencoded({ extended: false, limit: IMPORT_FORM_LIMIT, parameterLimit: 50 }),
    ...multipartForm(IMPORT_FORM_LIMIT),
  );
  consoleRouter.use(express.urlencoded({ extended: false, limit: FORM_LIMIT, parameterLimit: 200 }));
  consoleRouter.get('/', async (req, res) => {
    const session = await ctx.sessionOf(req);
    res.redirect(302, session ? paths.fleet : paths.signIn);
  });
  signInRoutes(consoleRouter, ctx);
  pageRoutes(consoleRouter, ctx);
  definitionRoutes(consoleRouter, ctx);
  rulesRoutes(consoleRouter, ctx);
  manageDeviceRoutes(consoleRouter, ctx);
  manageAccessRoutes(consoleRouter, ctx);
  manageAlertingRoutes(consoleRouter, ctx);
  manageAuditRoutes(consoleRouter, ctx);
  consoleRouter.use((req, res) => {
    void ctx.sessionOf(req, { renew: false }).then((s) =>
      ctx.render(res, 404, {
        title: 'Not found',
        session: s ?? undefined,
        body: errorBody('Not found', 'There is nothing at this address.', s !== null),
      }),
    );
  });
  consoleRouter.use((err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const e = toClientError(err, deps.log, { route: 'console' });
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (e.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(e.retryAfterSeconds));
    const title =
      e.status === 403
        ? 'Not allowed'
        : e.status === 404
          ? 'Not found'
          : e.status === 401
            ? 'Signed out'
            : 'Something went wrong';
    void ctx.sessionOf(req, { renew: false }).then(
      (s) =>
        ctx.render(res, e.status, {
          title,
          session: s ?? undefined,
          body: errorBody(title, e.message, s !== null, e.code),
        }),
      () => ctx.render(res, e.status, { title, body: errorBody(title, e.message, false, e.code) }),
    );
  });
  router.use('/console', consoleRouter);

  let closing: Promise<void> | undefined;
  return {
    router,
    close: () =>
      (closing ??= Promise.resolve().then(() => {
        live.close();
        workbench.close();
      })),
  };
}
