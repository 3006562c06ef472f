/**
 * The `api` role: the read API with the web console and the ops routes beside it on one port.
 */
import type { RequestHandler } from 'express';
import { createApiApp } from '../api/api-app.ts';
import { createConsole } from '../console/console-app.ts';
import { createHttpServer, type HttpTimeouts } from '../http/http-server.ts';
import { closeServer, listen } from '../lib/listen.ts';
import { managementRoutes } from '../management/management-routes.ts';
import { openManagement } from '../management/open-management.ts';
import { openTrackedHashes } from '../redis/tracked-hashes.ts';
import type { RoleContext } from './role-context.ts';

/** Hashes the API keeps until they change: device records of a large fleet's busiest devices. */
const TRACKED_HASHES_MAX = 50_000;

/** Serves the read API on VIGIL_API_PORT, with `ops` (the ops routes it serves too); its port. */
export async function startApiRole(
  ctx: RoleContext,
  ops: RequestHandler,
  timeouts: HttpTimeouts,
): Promise<number> {
  const { config, keys, redis, log, lifecycle } = ctx;
  const shared = { keys, redis, influx: ctx.influx, tenancy: ctx.tenancy, ingestLog: ctx.ingestLog, log };
  const management = openManagement({ config, keys, redis, connections: ctx.connections, log });
  // Closed after the server (stopped last registered first): no operation is under way by then.
  lifecycle.add('management', () => management.close());
  const webConsole = createConsole({ ...shared, config, management });
  lifecycle.add('console', () => webConsole.close());
  const reads = ctx.connections.reads('vigil-api-reads');
  // Locales, definitions and device records, read by every sensors request, change seldom.
  const hashes = openTrackedHashes(ctx.connections, 'vigil-api', log, TRACKED_HASHES_MAX);
  lifecycle.add('tracked reads', () => hashes.close());
  const moreRoutes = managementRoutes(management);
  const api = createApiApp({ ...shared, config, reads, hashes, metrics: ctx.metrics, moreRoutes }, [
    ops,
    webConsole.router,
  ]);
  const server = createHttpServer(api, timeouts);
  const port = await listen(server, config.apiPort, config.host, 'VIGIL_API_PORT');
  lifecycle.add('api', () => closeServer(server));
  return port;
}
