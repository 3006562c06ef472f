/**
 * The express app both HTTP surfaces start from: no X-Powered-By, no ETag (every answer changes
 * with the next reading, and POST answers are not cached anyway), security headers from helmet.
 */
import express, { type RequestHandler } from 'express';
import helmet from 'helmet';

/**
 * The headers of helmet that mean something for answers that are data, never pages: a
 * Content-Security-Policy that allows nothing (`default-src 'none'`, `frame-ancestors 'none'`),
 * `X-Content-Type-Options: nosniff`, `X-Frame-Options`, `Referrer-Policy` and
 * `Cross-Origin-Resource-Policy` — what OWASP's REST security advice lists. The rest of helmet's
 * defaults govern documents (opener policy, origin-keyed agent clusters, DNS prefetching, IE8
 * downloads, Flash and PDF policies, the XSS auditor); the web console's pages get them from its own
 * set (console/security.ts). No Strict-Transport-Security: Vigil serves plain HTTP, and HSTS
 * belongs to whatever terminates TLS in front of it.
 */
const jsonSecurityHeaders = fixedHeaders(
  helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
    },
    strictTransportSecurity: false,
    crossOriginOpenerPolicy: false,
    originAgentCluster: false,
    xDnsPrefetchControl: false,
    xDownloadOptions: false,
    xPermittedCrossDomainPolicies: false,
    xXssProtection: false,
  }),
);

export function createExpressApp(): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(jsonSecurityHeaders);
  return app;
}

type HeaderStep = { set: string; value: string | number | readonly string[] } | { remove: string };

/**
 * The headers a header-only middleware (helmet's) sets, taken once and replayed on every answer in
 * the same order: helmet runs a dozen middleware per request to set the same constant values.
 * Only for middleware whose headers do not depend on the request (no per-request CSP nonce): it
 * sees an empty request here, and must answer synchronously.
 */
export function fixedHeaders(middleware: RequestHandler): RequestHandler {
  const steps: HeaderStep[] = [];
  const recorder = {
    setHeader(name: string, value: string | number | readonly string[]) {
      steps.push({ set: name, value });
      return recorder;
    },
    removeHeader(name: string) {
      steps.push({ remove: name });
    },
  };
  let done = false;
  void middleware({} as express.Request, recorder as unknown as express.Response, (err?: unknown) => {
    if (err !== undefined)
      throw err instanceof Error ? err : new Error('fixedHeaders: the middleware failed');
    done = true;
  });
  if (!done) throw new Error('fixedHeaders: the middleware did not finish synchronously');
  return (_req, res, next) => {
    for (const step of steps) {
      if ('set' in step) res.setHeader(step.set, step.value);
      else res.removeHeader(step.remove);
    }
    next();
  };
}
