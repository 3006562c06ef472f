/**
 * For `npm start`, `npm run demo` and `npm run bench`: makes sure Redis and InfluxDB answer on
 * the configured URLs, starting local ones (data under `var/`) only when nothing answers there
 * and the URL points at this machine. Returns what it started, so stopping stops only that. What
 * it starts runs in a process group of its own, so that a Ctrl-C reaches only the script, which
 * stops Vigil while the servers still answer and then stops them; should the script exit any other
 * way, it stops them as it exits.
 */
import { join } from 'node:path';
import { isListening, startInflux, startRedis, type LocalService } from './local-services.ts';

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '::1', '[::1]']);

export async function ensureLocalServices(opts: {
  redisUrl: string;
  influxUrl: string;
  varDir: string;
  say: (msg: string) => void;
}): Promise<LocalService[]> {
  const started: LocalService[] = [];
  const targets = [
    {
      url: new URL(opts.redisUrl),
      name: 'Redis',
      defaultPort: 6379,
      start: (port: number) =>
        startRedis({ port, dataDir: join(opts.varDir, 'redis'), ownProcessGroup: true }),
    },
    {
      url: new URL(opts.influxUrl),
      name: 'InfluxDB',
      defaultPort: 8086,
      start: (port: number) =>
        startInflux({ port, dataDir: join(opts.varDir, 'influxdb'), ownProcessGroup: true }),
    },
  ];
  try {
    for (const t of targets) {
      const port = Number(t.url.port || t.defaultPort);
      if (await isListening(port, t.url.hostname.replace(/^\[|\]$/g, ''))) {
        opts.say(`${t.name} already answers on ${t.url.host}; using it`);
        continue;
      }
      if (!LOCAL_HOSTS.has(t.url.hostname)) {
        throw new Error(
          `${t.name} does not answer on ${t.url.host} and it is not a local address to start it on`,
        );
      }
      opts.say(`starting ${t.name} on 127.0.0.1:${port} (data in ${opts.varDir})`);
      started.push(await t.start(port));
    }
  } catch (err) {
    await Promise.allSettled(started.map((s) => s.stop()));
    throw err;
  }
  // Out of the terminal's process group, they would outlive a script that exits without stopping
  // them (a second Ctrl-C, an error): they are asked to stop as it exits (a no-op once stopped).
  process.once('exit', () => {
    for (const s of started) s.process?.kill('SIGTERM');
  });
  return started;
}
