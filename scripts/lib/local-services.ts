/**
 * Starts private redis-server and influxd processes for development, tests and benchmarks.
 * Each instance gets its own data directory, loopback-only ports (influxd's RPC port too) and is
 * stopped only by whoever started it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync, openSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';

export interface LocalService {
  name: string;
  url: string;
  port: number;
  dataDir: string;
  /** Stops the process (SIGTERM, then SIGKILL after `graceMs`). Safe to call twice. */
  stop(graceMs?: number): Promise<void>;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port with the same data (after stop or kill). */
  restart(): Promise<void>;
  readonly process: ChildProcess | undefined;
}

/** A free TCP port on 127.0.0.1, chosen by the kernel. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => resolve(port));
    });
  });
}

/** True when something accepts TCP connections on host:port. */
export async function isListening(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ port, host });
    sock.once('connect', () => {
      sock.destroy();
      resolve(true);
    });
    sock.once('error', () => resolve(false));
  });
}

async function waitFor(
  check: () => Promise<boolean>,
  what: string,
  timeoutMs: number,
  child: ChildProcess,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`${what} exited with code ${child.exitCode} during start`);
    if (await check()) return;
    await sleep(50);
  }
  throw new Error(`${what} did not become ready within ${timeoutMs} ms`);
}

function supervise(
  name: string,
  url: string,
  port: number,
  dataDir: string,
  launch: () => ChildProcess,
  ready: () => Promise<boolean>,
): Promise<LocalService> {
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = launch();
    await waitFor(ready, name, 60_000, child);
  };
  const stopWith = async (signal: NodeJS.Signals, graceMs: number): Promise<void> => {
    const c = child;
    if (!c || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill(signal);
    const timer = setTimeout(() => c.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  };
  const service: LocalService = {
    name,
    url,
    port,
    dataDir,
    stop: (graceMs = 5000) => stopWith('SIGTERM', graceMs),
    kill: () => stopWith('SIGKILL', 0),
    restart: start,
    get process() {
      return child;
    },
  };
  return start().then(() => service);
}

/**
 * In a process group of its own: the Ctrl-C of a terminal (SIGINT to its foreground process group)
 * does not reach it, so whoever started it can stop what uses it first and then stop it.
 */
interface GroupOption {
  ownProcessGroup?: boolean;
}

export interface RedisOptions extends GroupOption {
  port?: number;
  dataDir: string;
  /** appendfsync policy; `everysec` is Vigil's production setting. */
  appendfsync?: 'everysec' | 'always' | 'no';
}

/**
 * Starts redis-server with AOF on and `maxmemory-policy noeviction` (a queue must never be
 * evicted), and hash values up to 128 bytes kept compact: a device's state hash holds a ~114-byte
 * packed record per data point, 712 instead of 1,400 bytes per 4-point device at the same CPU.
 */
export async function startRedis(opts: RedisOptions): Promise<LocalService> {
  const port = opts.port ?? (await freePort());
  mkdirSync(opts.dataDir, { recursive: true });
  const log = openSync(join(opts.dataDir, 'redis.log'), 'a');
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    opts.dataDir,
    '--appendonly',
    'yes',
    '--appendfsync',
    opts.appendfsync ?? 'everysec',
    '--maxmemory-policy',
    'noeviction',
    '--hash-max-listpack-value',
    '128',
    '--save',
    '',
    '--daemonize',
    'no',
    '--protected-mode',
    'yes',
  ];
  return supervise(
    'redis-server',
    `redis://127.0.0.1:${port}`,
    port,
    opts.dataDir,
    () =>
      spawn('redis-server', args, { stdio: ['ignore', log, log], detached: opts.ownProcessGroup === true }),
    () => redisPing(port),
  );
}

async function redisPing(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ port, host: '127.0.0.1' });
    let buf = '';
    sock.once('connect', () => sock.write('PING\r\n'));
    sock.on('data', (d) => {
      buf += d.toString();
      if (buf.includes('\r\n')) {
        sock.destroy();
        resolve(buf.startsWith('+PONG'));
      }
    });
    sock.once('error', () => resolve(false));
  });
}

export interface InfluxOptions extends GroupOption {
  port?: number;
  dataDir: string;
  /** Requires credentials on the HTTP API (create the first admin user with an open CREATE USER). */
  authEnabled?: boolean;
}

/** influxd's Go GC target when the environment sets none (docs/history.md, "InfluxDB's memory"). */
export const INFLUX_GOGC = '400';

/** Starts influxd (1.x) with every listener on loopback and the internal monitor store off. */
export async function startInflux(opts: InfluxOptions): Promise<LocalService> {
  const port = opts.port ?? (await freePort());
  const rpcPort = await freePort();
  mkdirSync(opts.dataDir, { recursive: true });
  const conf = join(opts.dataDir, 'influxdb.conf');
  writeFileSync(
    conf,
    [
      'reporting-disabled = true',
      `bind-address = "127.0.0.1:${rpcPort}"`,
      '[meta]',
      `  dir = "${join(opts.dataDir, 'meta')}"`,
      '[data]',
      `  dir = "${join(opts.dataDir, 'data')}"`,
      `  wal-dir = "${join(opts.dataDir, 'wal')}"`,
      '  query-log-enabled = false',
      '  wal-fsync-delay = "0s"',
      // A fleet past 100,000 devices: 1.x refuses more values of one tag (`device`) by default.
      '  max-values-per-tag = 0',
      '  max-series-per-database = 0',
      '[coordinator]',
      '  log-queries-after = "0s"',
      '[monitor]',
      '  store-enabled = false',
      '[http]',
      `  bind-address = "127.0.0.1:${port}"`,
      '  log-enabled = false',
      '  max-body-size = 0',
      `  auth-enabled = ${opts.authEnabled === true}`,
      '[continuous_queries]',
      '  enabled = true',
      '  log-enabled = false',
      '  run-interval = "1s"',
      '',
    ].join('\n'),
  );
  const log = openSync(join(opts.dataDir, 'influxd.log'), 'a');
  const url = `http://127.0.0.1:${port}`;
  return supervise(
    'influxd',
    url,
    port,
    opts.dataDir,
    // GOGC=400: Go's collector runs at 5× the live heap instead of 2×. Under Vigil's writes that
    // took influxd from 22.3 to 19.5 µs of CPU per payload for ~150 MB more RSS (docs/history.md).
    () =>
      spawn('influxd', ['-config', conf], {
        stdio: ['ignore', log, log],
        detached: opts.ownProcessGroup === true,
        env: { ...process.env, GOGC: process.env.GOGC ?? INFLUX_GOGC },
      }),
    async () => {
      try {
        const res = await fetch(`${url}/ping`);
        return res.status === 204;
      } catch {
        return false;
      }
    },
  );
}
