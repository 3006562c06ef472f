/**
 * The express app both HTTP surfaces start from: no X-Powered-By, no ETag (every answer changes
 * with the next reading, and POST answers are not cached anyway), security headers from helmet.
 */
import express from 'express';
import helmet from 'helmet';

/**
 * Helmet's defaults with a Content-Security-Policy for answers that are data, never pages
 * (`default-src 'none'`), and without Strict-Transport-Security: Vigil serves plain HTTP, and HSTS
 * belongs to whatever terminates TLS in front of it.
 */
const jsonSecurityHeaders = helmet({
  contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
  strictTransportSecurity: false,
});

export function createExpressApp(): express.Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(jsonSecurityHeaders);
  return app;
}
