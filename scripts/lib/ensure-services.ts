/**
 * For `npm start`, `npm run demo` and `npm run bench`: makes sure Redis and InfluxDB answer on
 * the configured URLs, starting local ones (data under `var/`) only when nothing answers there
 * and the URL points at this machine. Returns what it started, so stopping stops only that.
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
      start: (port: number) => startRedis({ port, dataDir: join(opts.varDir, 'redis') }),
    },
    {
      url: new URL(opts.influxUrl),
      name: 'InfluxDB',
      defaultPort: 8086,
      start: (port: number) => startInflux({ port, dataDir: join(opts.varDir, 'influxdb') }),
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
  return started;
}
