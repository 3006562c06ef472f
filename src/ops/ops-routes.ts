import { Router, type Request, type Response } from 'express';
import type { Registry } from 'prom-client';

export interface ReadinessCheck {
  name: string;
  /** Resolves true when the dependency answers. Must not throw. */
  check(): Promise<boolean>;
}

/**
 * `/healthz` (process up), `/readyz` (every dependency answers) and `/metrics` (Prometheus).
 * Served without a token on the API port, or on the ops port in processes without the api role.
 */
export function createOpsRoutes(deps: { checks: ReadinessCheck[]; metrics: Registry }): Router {
  const router = Router();
  router.get('/healthz', (_req: Request, res: Response) => {
    res.json({ status: 'success', data: { healthy: true } });
  });
  router.get('/readyz', async (_req: Request, res: Response) => {
    const results = await Promise.all(
      deps.checks.map(async (c) => [c.name, await c.check().catch(() => false)] as const),
    );
    const ready = results.every(([, ok]) => ok);
    res.status(ready ? 200 : 503).json({
      status: ready ? 'success' : 'error',
      data: { ready, checks: Object.fromEntries(results) },
    });
  });
  router.get('/metrics', async (_req: Request, res: Response) => {
    res.type(deps.metrics.contentType).send(await deps.metrics.metrics());
  });
  return router;
}
