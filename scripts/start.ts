/**
 * `npm start`: the whole service on this machine, with the settings of the environment and of the
 * settings file (config/vigil.env unless VIGIL_CONFIG_FILE names another). Starts Redis and
 * InfluxDB under `var/` unless they already answer on the configured URLs, runs Vigil, and on
 * Ctrl-C stops Vigil first and then only the servers it started itself.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ConfigError,
  loadConfig,
  settingsFilePath,
  type LoadConfigOptions,
} from '../src/config/load-config.ts';
import type { Config } from '../src/config/schema.ts';
import { createLogger } from '../src/log/logger.ts';
import { startVigil } from '../src/main.ts';
import { PortInUseError } from '../src/lib/listen.ts';
import { isAppError } from '../src/errors/app-error.ts';
import { ensureLocalServices } from './lib/ensure-services.ts';
import { isListening, type LocalService } from './lib/local-services.ts';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Starts the servers and Vigil; resolves with a stop function. Used by start and demo (which
 * names its own settings file in `settings`).
 */
export async function startLocal(settings: LoadConfigOptions = {}): Promise<{
  stop: () => Promise<void>;
  config: Config;
  apiPort: number;
  gatewayPort: number;
  mqttPort: number;
  redisUrl: string;
  keyPrefix: string;
}> {
  const say = (msg: string) => process.stderr.write(`[vigil] ${msg}\n`);
  let config: Config;
  try {
    config = loadConfig(process.env, {}, settings);
  } catch (err) {
    if (err instanceof ConfigError) fail(err.message);
    throw err;
  }
  const unread = settingsFilePath();
  say(
    config.configFile !== undefined
      ? `settings: the environment, then ${config.configFile}, then the defaults`
      : `settings: the environment and the defaults (${unread === undefined ? 'VIGIL_CONFIG_FILE is empty' : `no ${unread}`})`,
  );
  // Fail before starting anything when the service's own port is taken (a second `npm start`).
  if (config.roles.includes('api') && (await isListening(config.apiPort))) {
    fail(
      `port ${config.apiPort} (VIGIL_API_PORT) is already in use — is Vigil already running? Stop it or set VIGIL_API_PORT.`,
    );
  }
  let services: LocalService[] = [];
  if (!process.env.VIGIL_NO_LOCAL_SERVICES) {
    services = await ensureLocalServices({
      redisUrl: config.redisUrl,
      influxUrl: config.influxUrl,
      varDir: join(root, 'var'),
      say,
    });
  }
  const stopServices = () =>
    Promise.allSettled(services.reverse().map((s) => s.stop())).then(() => undefined);
  const log = createLogger(config.logLevel);
  try {
    const vigil = await startVigil(config, log);
    say(
      `read API http://127.0.0.1:${vigil.ports.api}  gateway http://127.0.0.1:${vigil.ports.gateway}  MQTT ${vigil.ports.mqtt || 'off'}`,
    );
    return {
      config,
      apiPort: vigil.ports.api,
      gatewayPort: vigil.ports.gateway,
      mqttPort: vigil.ports.mqtt,
      redisUrl: config.redisUrl,
      keyPrefix: config.keyPrefix,
      stop: async () => {
        try {
          await vigil.close();
        } finally {
          await stopServices();
        }
      },
    };
  } catch (err) {
    await stopServices();
    if (err instanceof PortInUseError) fail(err.message);
    if (isAppError(err) && err.code === 'STATE_LAYOUT_UNKNOWN') fail(err.message);
    throw err;
  }
}

function fail(message: string): never {
  process.stderr.write(`vigil: ${message}\n`);
  process.exit(1);
}

/**
 * Stops on the first SIGINT/SIGTERM/SIGHUP, saying "stopping…" and, once everything has stopped,
 * "stopped"; a second signal exits at once.
 */
export function stopOnSignals(stop: () => Promise<void>): void {
  let stopping = false;
  const onSignal = () => {
    if (stopping) process.exit(1);
    stopping = true;
    process.stderr.write('[vigil] stopping…\n');
    const timer = setTimeout(() => {
      process.stderr.write('[vigil] stop took too long; exiting\n');
      process.exit(1);
    }, 9000);
    timer.unref();
    // What failed to stop is logged; the last line and the exit status say so.
    void stop().then(
      () => {
        process.stderr.write('[vigil] stopped\n');
        process.exit(0);
      },
      () => {
        process.stderr.write('[vigil] stopped; not everything stopped cleanly (see above)\n');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  process.on('SIGHUP', onSignal);
}

if (import.meta.main) {
  const running = await startLocal();
  stopOnSignals(running.stop);
}
