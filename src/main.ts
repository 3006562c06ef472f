/**
 * Composition root: reads configuration, builds the adapters, starts the roles this process runs
 * and stops them in reverse order (traffic, workers, history flush, Redis) on SIGINT/SIGTERM.
 */
import type { Server } from 'node:http';
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { Config, Role } from './config/schema.ts';
import { ConfigError, loadConfig } from './config/load-config.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { closeServer, listen, PortInUseError } from './lib/listen.ts';
import { createOpsRouter, type ReadinessCheck } from './ops/ops-routes.ts';
import { closeRedis, connectRedis, pingRedis } from './redis/connect.ts';
import { createInfluxClient } from './history/influx-client.ts';
import { createExpressApp } from './http/create-app.ts';
import { errorHandler, notFound } from './http/error-handling.ts';
import { createHttpServer, type HttpTimeouts } from './http/http-server.ts';
import { createKeys } from './keys.ts';
import { createTenancyStore } from './tenancy/tenancy-store.ts';
import { loginLimitsOf } from './tenancy/login.ts';
import type { ProcessItems } from './worker/ingest-processor.ts';
import type { IngestService } from './ingest/ingest-service.ts';
import { createIngestLog } from './ingest/ingest-log.ts';
import { ensureHistorySchema, retentionMs } from './history/schema.ts';
import { createHistoryWriter } from './history/history-writer.ts';
import type { InfluxClient } from './history/influx-client.ts';
import { createStateStore } from './state/state-store.ts';
import { migrateData } from './state/migrations.ts';
import { MIGRATIONS } from './migrations.ts';
import { isAppError } from './errors/app-error.ts';
import { parseDurationMs } from './lib/duration.ts';
import { createCatalog } from './tenancy/catalog.ts';

// Each role's own modules (aedes, the MQTT client, the sandbox, the read API, …) are imported when the
// role starts, so a process loads only what its roles use: a worker process is ready in about half
// the time when it does not load the entries and the read API.

export interface RunningVigil {
  config: Config;
  /** Bound ports (0 when the role is off). */
  ports: { api: number; gateway: number; mqtt: number; ops: number };
  /** Graceful stop in reverse start order; safe to call twice. */
  close(): Promise<void>;
}

interface Stoppable {
  name: string;
  close(): Promise<void>;
}

/** What a test or the bench may change of the roles; production passes nothing. */
export interface StartOptions {
  /** Wraps the worker's processing of each step (e.g. to crash on a marked payload). */
  wrapProcess?: (process: ProcessItems) => ProcessItems;
  /**
   * The clock of the worker's steps and of the scheduler's timers and availability checks (epoch
   * ms): tests of conditions that wait move it instead of waiting.
   */
  clock?: () => number;
  /**
   * false: the worker records no late values (history versions, late hours), so that the bench can
   * measure what that bookkeeping costs when no value is late (`npm run bench -- --only
   * late-writes`). Not a setting: without it, late values would leave last24Hours and the hourly
   * rollups inexact, which no installation should choose.
   */
  lateWrites?: boolean;
}

/** Starts the roles of `config.roles` in this process. */
export async function startVigil(config: Config, log: Logger, options: StartOptions = {}): Promise<RunningVigil> {
  const roles = new Set<Role>(config.roles);
  const started: Stoppable[] = [];
  const ports = { api: 0, gateway: 0, mqtt: 0, ops: 0 };
  const metrics = new Registry();
  collectDefaultMetrics({ register: metrics, prefix: 'vigil_' });

  const redis = connectRedis(config.redisUrl, 'command', 'vigil-main');
  started.push({ name: 'redis', close: () => closeRedis(redis) });
  const influx = createInfluxClient({
    url: config.influxUrl,
    database: config.influxDatabase,
    username: config.influxUsername,
    password: config.influxPassword,
  });
  const checks: ReadinessCheck[] = [
    { name: 'redis', check: () => pingRedis(redis) },
    { name: 'influxdb', check: () => influx.ping() },
  ];

  const close = memoise(async () => {
    for (const s of [...started].reverse()) {
      try {
        await s.close();
        log.debug({ component: s.name }, 'stopped');
      } catch (err) {
        log.error({ err, component: s.name }, 'failed to stop cleanly');
      }
    }
  });

  try {
    const keys = createKeys(config.keyPrefix);
    // Before any role: none may read or write data of another layout.
    await migrateData({ redis, keys, log, migrations: MIGRATIONS });
    const tenancy = createTenancyStore({
      redis,
      keys,
      login: loginLimitsOf(config),
    });
    const ingestLog = createIngestLog({ redis, keys, size: config.ingestLogSize });
    const catalog = createCatalog({ tenancy, ttlMs: config.catalogCacheMs });
    const state = createStateStore({ redis, keys, eventsCap: config.eventsKeptPerEnv });
    const history = createHistoryWriter({ influx, log, metrics });
    if (roles.has('worker')) {
      const [
        { createSandbox },
        { registerSandboxMetrics },
        { startOutboxDrainer },
        { createIngestProcessor },
        { deadLetterOutcomes },
        { startWorker },
        { createLateWrites },
        { startRecentPayloadWriter },
        { fairParsers },
      ] = await Promise.all([
        import('./sandbox/sandbox.ts'),
        import('./sandbox/sandbox-metrics.ts'),
        import('./events/outbox-drainer.ts'),
        import('./worker/ingest-processor.ts'),
        import('./worker/outcomes.ts'),
        import('./worker/start-worker.ts'),
        import('./worker/late-writes.ts'),
        import('./recent-payloads/recent-payload-writer.ts'),
        import('./worker/parser-fairness.ts'),
      ]);
      const schema = keepEnsuringSchema(influx, config, log);
      started.push(schema);
      // Steps started before the retention policies exist fail their history writes and are
      // retried: with InfluxDB up, start after the schema is in place.
      await schema.firstAttempt;
      const sandbox = createSandbox({
        timeoutMs: config.sandboxTimeoutMs,
        memoryLimitMb: config.sandboxMemoryMb,
        maxIsolates: config.sandboxMaxIsolates,
        isolateIdleMs: config.sandboxIsolateIdleMs,
        log,
      });
      registerSandboxMetrics(metrics, sandbox);
      started.push({ name: 'sandbox', close: () => Promise.resolve(sandbox.close()) });
      const drainer = startOutboxDrainer({
        redisUrl: config.redisUrl,
        keys,
        history,
        log,
        consumer: `${process.pid}-${Date.now()}`,
        maxEntries: config.eventOutboxMaxEntries,
      });
      started.push({ name: 'event outbox', close: () => drainer.close() });
      // Stopped after the worker (`started` stops in reverse): what its last steps kept is written.
      const recentWriter = startRecentPayloadWriter({ redis, keys, count: config.deviceRecentPayloads, log });
      started.push({ name: 'recent payloads', close: () => recentWriter.close() });
      const processItems = createIngestProcessor({
        ...fairParsers(sandbox, config, metrics, log),
        catalog,
        sandbox,
        state,
        history,
        ingestLog,
        log,
        defaultAvailabilityMinutes: config.defaultAvailabilityMinutes,
        recentPayloads: { keys, count: config.deviceRecentPayloads, writer: recentWriter },
        rawRetentionMs: retentionMs(config.rawRetention),
        ...(options.lateWrites === false
          ? {}
          : { lateWrites: createLateWrites({ keys, resampleEveryMs: resampleEveryMs(config) }) }),
        ...(options.clock ? { clock: options.clock } : {}),
      });
      const worker = await startWorker({
        config,
        keys,
        log,
        metrics,
        process: options.wrapProcess ? options.wrapProcess(processItems) : processItems,
        deadLetterLog: (items) => ingestLog.commands(deadLetterOutcomes(items)),
      });
      started.push({ name: 'worker', close: () => worker.close() });
    }
    if (roles.has('scheduler')) {
      const { startAvailabilityScheduler } = await import('./scheduler/availability-scheduler.ts');
      const scheduler = startAvailabilityScheduler({
        redis,
        keys,
        state,
        catalog,
        log,
        intervalMs: config.availabilityCheckMs,
        ...(options.clock ? { clock: options.clock } : {}),
      });
      started.push({ name: 'scheduler', close: () => scheduler.close() });
      const { startDeviceTimers } = await import('./scheduler/device-timers.ts');
      const timers = startDeviceTimers({
        redis,
        keys,
        partitions: config.queuePartitions,
        log,
        intervalMs: config.timerCheckMs,
        ...(options.clock ? { clock: options.clock } : {}),
      });
      started.push({ name: 'device timers', close: () => timers.close() });
      // Late values' hours are the scheduler's upkeep too: every installation runs one.
      const { startRollupRepair } = await import('./history/start-rollup-repair.ts');
      const repair = startRollupRepair({ config, keys, influx, log, metrics });
      started.push({ name: 'rollup repair', close: () => repair.close() });
    }
    if (roles.has('notifier')) {
      const { startNotifier } = await import('./alerting/start-notifier.ts');
      const notifier = startNotifier({ config, keys, log, metrics });
      started.push({ name: 'notifier', close: () => notifier.close() });
    }
    // Traffic last, so that it is the first thing stopped.
    let ingest: IngestService | undefined;
    const queueConnection = connectRedis(config.redisUrl, 'blocking', 'vigil-queue');
    started.push({ name: 'queue connection', close: () => closeRedis(queueConnection) });
    if (roles.has('gateway') || roles.has('mqtt')) {
      const { createIngestService } = await import('./ingest/ingest-service.ts');
      const service = createIngestService({ config, keys, redis, queueConnection, log, metrics });
      ingest = service;
      started.push({ name: 'ingest', close: () => service.close() });
    }
    if (roles.has('gateway') && ingest) {
      const { startGateway } = await import('./gateway/start-gateway.ts');
      const gateway = await startGateway({ config, keys, redis, queueConnection, log, metrics, ingest });
      ports.gateway = gateway.port;
      started.push({ name: 'gateway', close: () => gateway.close() });
    }
    if (roles.has('mqtt') && ingest && config.mqttEnabled) {
      const { startMqttBroker } = await import('./mqtt/broker.ts');
      const broker = await startMqttBroker({ config, keys, redis, queueConnection, log, metrics, ingest });
      ports.mqtt = broker.port;
      started.push({ name: 'mqtt broker', close: () => broker.close() });
    }
    if (roles.has('mqtt') && ingest && config.mqttBridgeUrl) {
      const { startMqttBridge } = await import('./mqtt/bridge.ts');
      const bridge = await startMqttBridge({ config, keys, redis, queueConnection, log, metrics, ingest });
      started.push({ name: 'mqtt bridge', close: () => bridge.close() });
    }
    const timeouts: HttpTimeouts = {
      headersTimeoutMs: config.httpHeadersTimeoutMs,
      requestTimeoutMs: config.httpRequestTimeoutMs,
    };
    const opsDeps = { checks, metrics, metricsToken: config.metricsToken };
    if (roles.has('api')) {
      const { createApiApp } = await import('./api/api-app.ts');
      const reads = connectRedis(config.redisUrl, 'reads', 'vigil-api-reads');
      started.push({ name: 'api reads connection', close: () => closeRedis(reads) });
      const ops = createOpsRouter(opsDeps, { withMetrics: config.metricsToken !== undefined });
      const { createConsole } = await import('./console/console-app.ts');
      const webConsole = createConsole({ config, keys, redis, influx, tenancy, ingestLog, log });
      started.push({ name: 'console', close: () => webConsole.close() });
      const api = createApiApp({ config, keys, redis, reads, influx, tenancy, ingestLog, log, metrics }, [
        ops,
        webConsole.router,
      ]);
      const server = createHttpServer(api, timeouts);
      ports.api = await listen(server, config.apiPort, config.host, 'VIGIL_API_PORT');
      started.push(serverStoppable('api', server));
    }
    const opsApp = createExpressApp();
    opsApp.use(createOpsRouter(opsDeps, { withMetrics: true }), notFound, errorHandler(log));
    const opsServer = createHttpServer(opsApp, timeouts);
    ports.ops = await listen(opsServer, config.opsPort, config.opsHost, 'VIGIL_OPS_PORT');
    started.push(serverStoppable('ops', opsServer));
  } catch (err) {
    await close();
    throw err;
  }
  log.info({ roles: [...roles], ports }, 'Vigil started');
  return { config, ports, close };
}

/**
 * Creates the InfluxDB schema now, or, while InfluxDB is unreachable, keeps trying in the
 * background (history writes fail and their jobs retry meanwhile; nothing is lost).
 * `firstAttempt` settles (never rejects) once the first try succeeded or failed.
 */
function keepEnsuringSchema(
  influx: InfluxClient,
  config: Config,
  log: Logger,
): Stoppable & { firstAttempt: Promise<void> } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const attempt = (): Promise<void> =>
    ensureHistorySchema(influx, {
      rawRetention: config.rawRetention,
      rollupRetention: config.rollupRetention,
      resampleEvery: config.rollupResampleEvery,
    }).then(
      () => log.debug('InfluxDB schema in place'),
      (err: unknown) => {
        log.warn(
          { err: err instanceof Error ? err.message : String(err) },
          'InfluxDB schema not created yet; retrying',
        );
        if (!stopped) timer = setTimeout(() => void attempt(), 5000);
      },
    );
  return {
    firstAttempt: attempt(),
    name: 'influx schema',
    close: () => {
      stopped = true;
      clearTimeout(timer);
      return Promise.resolve();
    },
  };
}

/** VIGIL_ROLLUP_RESAMPLE_EVERY in ms (its schema accepts INF, which no rollup query has). */
function resampleEveryMs(config: Config): number {
  return parseDurationMs(config.rollupResampleEvery) ?? 3_600_000;
}

function serverStoppable(name: string, server: Server): Stoppable {
  return { name, close: () => closeServer(server) };
}

function memoise(fn: () => Promise<void>): () => Promise<void> {
  let p: Promise<void> | undefined;
  return () => (p ??= fn());
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
    void vigil.close().then(() => process.exit(0));
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

if (import.meta.main) await main();
