/**
 * `/healthz` (process up), `/readyz` (every dependency answers) and `/metrics` (Prometheus). Every
 * process serves them on the ops port (VIGIL_OPS_PORT); the API port serves `/healthz` and
 * `/readyz` too, for load balancers, and `/metrics` only when VIGIL_METRICS_TOKEN is set. With a
 * token, `/metrics` asks for it (`Authorization: Bearer <token>`) wherever it is served.
 */
import express, { type RequestHandler } from 'express';
import type { Registry } from 'prom-client';
import { AppError } from '../errors/app-error.ts';
import { bearerToken } from '../http/bearer-token.ts';
import { safeEqual, sha256Hex } from '../tenancy/secrets.ts';

export interface ReadinessCheck {
  name: string;
  /** Resolves true when the dependency answers. Must not throw. */
  check(): Promise<boolean>;
}

export interface OpsDeps {
  checks: ReadinessCheck[];
  metrics: Registry;
  /** VIGIL_METRICS_TOKEN; undefined = metrics without a token. */
  metricsToken: string | undefined;
}

/** The ops routes; `withMetrics: false` leaves `/metrics` out (the API port without a token). */
export function createOpsRouter(deps: OpsDeps, opts: { withMetrics: boolean }): express.Router {
  const router = express.Router();
  router.get('/healthz', (_req, res) => {
    res.json({ status: 'success', data: { healthy: true } });
  });
  router.get('/readyz', async (_req, res) => {
    const checks = await readiness(deps.checks);
    const ready = Object.values(checks).every(Boolean);
    res.status(ready ? 200 : 503).json({ status: ready ? 'success' : 'error', data: { ready, checks } });
  });
  if (opts.withMetrics) {
    router.get('/metrics', requireMetricsToken(deps.metricsToken), async (_req, res) => {
      const text = await deps.metrics.metrics();
      res.type(deps.metrics.contentType).send(text);
    });
  }
  return router;
}

function requireMetricsToken(token: string | undefined): RequestHandler {
  if (token === undefined) return (_req, _res, next) => next();
  const expected = sha256Hex(token);
  return (req, _res, next) => {
    if (!safeEqual(sha256Hex(bearerToken(req)), expected))
      throw new AppError('UNAUTHORIZED', 'The metrics token is not VIGIL_METRICS_TOKEN.');
    next();
  };
}

async function readiness(checks: readonly ReadinessCheck[]): Promise<Record<string, boolean>> {
  const results = await Promise.all(
    checks.map(async (c) => [c.name, await c.check().catch(() => false)] as const),
  );
  return Object.fromEntries(results);
}
