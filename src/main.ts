/**
 * Composition root: reads configuration, builds the adapters, starts the roles this process runs
 * and stops them in reverse order (traffic, workers, history flush, Redis) on SIGINT/SIGTERM.
 */
import { createServer, type Server } from 'node:http';
import express from 'express';
import { Registry, collectDefaultMetrics } from 'prom-client';
import type { Config, Role } from './config/schema.ts';
import { ConfigError, loadConfig } from './config/load-config.ts';
import { createLogger, type Logger } from './log/logger.ts';
import { closeServer, listen, PortInUseError } from './ops/listen.ts';
import { createOpsRoutes, type ReadinessCheck } from './ops/ops-routes.ts';
import { closeRedis, connectRedis, pingRedis } from './redis/connect.ts';
import { createInfluxClient } from './history/influx-client.ts';
import { errorBody } from './errors/app-error.ts';

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

/** Starts the roles of `config.roles` in this process. */
export async function startVigil(config: Config, log: Logger): Promise<RunningVigil> {
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
    const opsRoutes = createOpsRoutes({ checks, metrics });
    const app = express();
    app.disable('x-powered-by');
    app.use(opsRoutes);
    app.use((_req, res) => {
      res.status(404).json(errorBody('NOT_FOUND', 'No such path.'));
    });
    if (roles.has('api')) {
      const server = createServer(app);
      ports.api = await listen(server, config.apiPort, config.host, 'VIGIL_API_PORT');
      started.push(serverStoppable('api', server));
    } else {
      const server = createServer(app);
      ports.ops = await listen(server, config.opsPort, config.host, 'VIGIL_OPS_PORT');
      started.push(serverStoppable('ops', server));
    }
  } catch (err) {
    await close();
    throw err;
  }
  log.info({ roles: [...roles], ports }, 'Vigil started');
  return { config, ports, close };
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
    if (err instanceof PortInUseError) {
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
