import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Registry } from 'prom-client';
import { send, sendJson } from '../http/send-json.ts';

export interface ReadinessCheck {
  name: string;
  /** Resolves true when the dependency answers. Must not throw. */
  check(): Promise<boolean>;
}

/** Answers an ops request; false when the request is not one (the caller answers it). */
export type OpsHandler = (req: IncomingMessage, res: ServerResponse) => boolean;

/**
 * `/healthz` (process up), `/readyz` (every dependency answers) and `/metrics` (Prometheus), GET
 * only. Served without a token on the API port, or on the ops port in processes without the api
 * role. A plain node:http handler, so a process without the api role does not load express.
 */
export function createOpsRoutes(deps: { checks: ReadinessCheck[]; metrics: Registry }): OpsHandler {
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const path = (req.url ?? '/').split('?', 1)[0] ?? '/';
    switch (path) {
      case '/healthz':
        sendJson(res, 200, { status: 'success', data: { healthy: true } });
        return true;
      case '/readyz':
        void readiness(deps.checks).then((checks) => {
          const ready = Object.values(checks).every(Boolean);
          sendJson(res, ready ? 200 : 503, { status: ready ? 'success' : 'error', data: { ready, checks } });
        });
        return true;
      case '/metrics':
        void deps.metrics.metrics().then(
          (text) => send(res, 200, deps.metrics.contentType, text),
          (err: unknown) => send(res, 500, 'text/plain; charset=utf-8', String(err)),
        );
        return true;
      default:
        return false;
    }
  };
}

async function readiness(checks: readonly ReadinessCheck[]): Promise<Record<string, boolean>> {
  const results = await Promise.all(
    checks.map(async (c) => [c.name, await c.check().catch(() => false)] as const),
  );
  return Object.fromEntries(results);
}
