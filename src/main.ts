/**
 * Composition root: reads configuration, builds the adapters and the process's one Redis connection
 * factory, starts the roles this process runs (src/roles/) and stops them in reverse order
 * (traffic, workers, history flush, Redis) on SIGINT/SIGTERM.
 */
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { Config, Role } from './config/schema.ts';
import { ConfigError, loadConfig } from './config/load-config.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { createLifecycle, type Lifecycle } from './lib/lifecycle.ts';
import { closeServer, listen, PortInUseError } from './lib/listen.ts';
import { createOpsRouter, type ReadinessCheck } from './ops/ops-routes.ts';
import { pingRedis } from './redis/connect.ts';
import { createConnections } from './redis/connections.ts';
import { createInfluxClient } from './history/influx-client.ts';
import { createExpressApp } from './http/create-app.ts';
import { errorHandler, notFound } from './http/error-handling.ts';
import { createHttpServer, type HttpTimeouts } from './http/http-server.ts';
import { createKeys } from './keys.ts';
import { createTenancyStore } from './tenancy/tenancy-store.ts';
import { loginLimitsOf } from './tenancy/login.ts';
import { createIngestLog } from './ingest/ingest-log.ts';
import { createHistoryWriter } from './history/history-writer.ts';
import { createStateStore } from './state/state-store.ts';
import { migrateData } from './state/migrations.ts';
import { MIGRATIONS } from './migrations.ts';
import { isAppError } from './errors/app-error.ts';
import { createCatalog } from './tenancy/catalog.ts';
import type { RoleContext, StartOptions } from './roles/role-context.ts';

export type { StartOptions } from './roles/role-context.ts';

// Each role's own modules (aedes, the MQTT client, the sandbox, the read API, …) are imported when the
// role starts, so a process loads only what its roles use: a worker process is ready in about half
// the time when it does not load the entries and the read API.

export interface RunningVigil {
  config: Config;
  /** Bound ports (0 when the role is off). */
  ports: { api: number; gateway: number; mqtt: number; ops: number };
  /**
   * Graceful stop in reverse start order; safe to call twice. Rejects (an AggregateError) when a
   * part failed to stop cleanly, once every part was stopped; each failure is logged.
   */
  close(): Promise<void>;
}

/** Starts the roles of `config.roles` in this process. */
export async function startVigil(
  config: Config,
  log: Logger,
  options: StartOptions = {},
): Promise<RunningVigil> {
  const lifecycle = createLifecycle({ log });
  // Registered first, so closed last: after every part that uses a connection stopped.
  const connections = createConnections(config);
  lifecycle.add('redis connections', () => connections.close());
  try {
    const ctx = await openShared(config, log, lifecycle, connections, options);
    const ports = await startRoles(ctx);
    log.info({ roles: config.roles, ports }, 'Vigil started');
    return { config, ports, close: lifecycle.close };
  } catch (err) {
    // What failed to stop is logged; the start's own failure is the one to report.
    await Promise.allSettled([lifecycle.close()]);
    throw err;
  }
}

/** The adapters every role shares, over the process's command connection. */
async function openShared(
  config: Config,
  log: Logger,
  lifecycle: Lifecycle,
  connections: RoleContext['connections'],
  options: StartOptions,
): Promise<RoleContext> {
  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics, prefix: 'vigil_' });
  const redis = connections.command('vigil-main');
  const influx = createInfluxClient({
    url: config.influxUrl,
    database: config.influxDatabase,
    username: config.influxUsername,
    password: config.influxPassword,
  });
  const keys = createKeys(config.keyPrefix);
  // Before any role: none may read or write data of another layout.
  await migrateData({ redis, keys, log, migrations: MIGRATIONS });
  const tenancy = createTenancyStore({ redis, keys, login: loginLimitsOf(config) });
  return {
    config,
    log,
    metrics,
    connections,
    redis,
    keys,
    influx,
    tenancy,
    ingestLog: createIngestLog({ redis, keys, size: config.ingestLogSize }),
    catalog: createCatalog({ tenancy, ttlMs: config.catalogCacheMs }),
    state: createStateStore({ redis, keys, eventsCap: config.eventsKeptPerEnv }),
    history: createHistoryWriter({ influx, log, metrics }),
    lifecycle,
    options,
  };
}

/** Starts each role of the process, traffic last (so that it is the first thing stopped). */
async function startRoles(ctx: RoleContext): Promise<RunningVigil['ports']> {
  const { config } = ctx;
  const roles = new Set<Role>(config.roles);
  const ports = { api: 0, gateway: 0, mqtt: 0, ops: 0 };
  if (roles.has('worker')) await (await import('./roles/start-worker-role.ts')).startWorkerRole(ctx);
  if (roles.has('scheduler')) (await import('./roles/start-scheduler-role.ts')).startSchedulerRole(ctx);
  if (roles.has('notifier')) {
    const { startNotifier } = await import('./roles/start-notifier.ts');
    const notifier = startNotifier(ctx);
    ctx.lifecycle.add('notifier', () => notifier.close());
  }
  if (roles.has('gateway') || roles.has('mqtt')) {
    Object.assign(ports, await (await import('./roles/start-ingest-roles.ts')).startIngestRoles(ctx));
  }
  const timeouts: HttpTimeouts = {
    headersTimeoutMs: config.httpHeadersTimeoutMs,
    requestTimeoutMs: config.httpRequestTimeoutMs,
  };
  const checks: ReadinessCheck[] = [
    { name: 'redis', check: () => pingRedis(ctx.redis) },
    { name: 'influxdb', check: () => ctx.influx.ping() },
  ];
  const opsDeps = { checks, metrics: ctx.metrics, metricsToken: config.metricsToken };
  if (roles.has('api')) {
    const ops = createOpsRouter(opsDeps, { withMetrics: config.metricsToken !== undefined });
    ports.api = await (await import('./roles/start-api-role.ts')).startApiRole(ctx, ops, timeouts);
  }
  const opsApp = createExpressApp();
  opsApp.use(createOpsRouter(opsDeps, { withMetrics: true }), notFound, errorHandler(ctx.log));
  const opsServer = createHttpServer(opsApp, timeouts);
  ports.ops = await listen(opsServer, config.opsPort, config.opsHost, 'VIGIL_OPS_PORT');
  ctx.lifecycle.add('ops', () => closeServer(opsServer));
  return ports;
}

/** Entry point for `npm start`: config from the environment, signals handled, one-line fatal errors. */
export async function main(): Promise<void> {
  let config: Config;
  try {
    config = loadConfig();
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`vigil: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(config.logLevel);
  let vigil: RunningVigil;
  try {
    vigil = await startVigil(config, log);
  } catch (err) {
    if (err instanceof PortInUseError || (isAppError(err) && err.code === 'STATE_LAYOUT_UNKNOWN')) {
      process.stderr.write(`vigil: ${err.message}\n`);
      process.exit(1);
    }
    log.fatal({ err }, 'start failed');
    process.exit(1);
  }
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    log.info({ signal }, 'stopping');
    const timer = setTimeout(() => {
      log.error('graceful stop took too long; exiting');
      process.exit(1);
    }, config.shutdownTimeoutMs);
    timer.unref();
    // A part that failed to stop is logged with its error; the last line and the exit status say so.
    void vigil.close().then(
      () => {
        log.info({ signal }, 'stopped');
        process.exit(0);
      },
      () => {
        log.error({ signal }, 'stopped; not everything stopped cleanly');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

if (import.meta.main) await main();
