/**
 * The express app both HTTP surfaces start from: no X-Powered-By, no ETag (every answer changes
 * with the next reading, and POST answers are not cached anyway), security headers from helmet.
 */
import express from 'express';
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
const jsonSecurityHeaders = helmet({
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
});

/** A new express app with the settings and security headers above. */
export function createExpressApp(): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(jsonSecurityHeaders);
  return app;
}
