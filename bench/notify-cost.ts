/**
 * What notifying costs alone, per notification: the notifier (outbox reader, router, BullMQ queue
 * and worker, webhook delivery, delivery log) in this process, a private Redis, and a webhook
 * receiver on loopback in a child process (not counted). Events are written to the outbox the way
 * the worker's state step writes them, `--per-step` every `--step-ms`; in a round "with" they match
 * the route (Temperature, WARNING and above) and are each delivered, in a round "without" they match
 * none, so the difference is what a route that notifies costs. Rounds alternate without/with.
 * `node --no-node-snapshot bench/notify-cost.ts [--count N] [--per-step N] [--step-ms N] [--rounds N] [--set key=value,…] [--commands]`
 * (`--commands`: Redis's commands per event of each round, with their µs, from INFO commandstats).
 * Each round also prints this process's read and write system calls per event and its CPU split
 * into user and system time: whether a notification's cost is round trips or JavaScript.
 * Defaults: 1,200 events per round, 16 every 400 ms (~40/s, the end-to-end bench's 1 % of
 * ~4,000 payloads/s), 3 pairs of rounds.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { Registry } from 'prom-client';
import { startRedis, type LocalService } from '../scripts/lib/local-services.ts';
import { createAlertingAdmin } from '../src/alerting/alerting-admin.ts';
import { startNotifier } from '../src/roles/start-notifier.ts';
import { loadConfig } from '../src/config/load-config.ts';
import type { Config } from '../src/config/schema.ts';
import type { EventRecord } from '../src/domain/types.ts';
import { adminDeps, createKeys } from '../src/keys.ts';
import { createLogger } from '../src/log/logger.ts';
import { createTenancyAdmin } from '../src/tenancy/tenancy-admin.ts';
import { createConnections } from '../src/redis/connections.ts';
import { cpuSeconds } from './lib/cpu.ts';
import { notifierSettings } from './lib/alerting.ts';
import { BENCH_ENV } from './lib/provision.ts';

const { values: args } = parseArgs({
  options: {
    receiver: { type: 'boolean', default: false },
    count: { type: 'string', default: '1200' },
    'per-step': { type: 'string', default: '16' },
    'step-ms': { type: 'string', default: '400' },
    rounds: { type: 'string', default: '3' },
    set: { type: 'string', default: '' },
    commands: { type: 'boolean', default: false },
  },
});

/** The receiver child: answers 204 to every webhook, and its count to `GET /count`. */
if (args.receiver) {
  let received = 0;
  const server = createServer((req, res) => {
    if (req.method === 'GET') return void res.end(String(received));
    req.resume();
    req.on('end', () => {
      received++;
      res.writeHead(204).end();
    });
  });
  server.keepAliveTimeout = 30_000;
  server.listen(0, '127.0.0.1', () =>
    process.stdout.write(`http://127.0.0.1:${(server.address() as AddressInfo).port}\n`),
  );
  process.stdin.resume();
  process.stdin.on('end', () => process.exit(0));
} else {
  await main();
}

/** This process's read and write system calls so far (Linux: /proc/self/io). */
function syscalls(): { reads: number; writes: number } {
  const io = readFileSync('/proc/self/io', 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}: (\\d+)`, 'm').exec(io)?.[1] ?? NaN);
  return { reads: field('syscr'), writes: field('syscw') };
}

type ReceiverChild = Awaited<ReturnType<typeof startReceiverChild>>;

async function startReceiverChild() {
  const child = spawn(process.execPath, [new URL(import.meta.url).pathname, '--receiver'], {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (c: Buffer) => resolve(c.toString().trim()));
    child.once('exit', (code) => reject(new Error(`receiver exited (${code})`)));
  });
  return {
    url,
    received: async () => Number(await (await fetch(`${url}/count`)).text()),
    stop: () => child.stdin.end(),
  };
}

async function main() {
  const count = Number(args.count);
  const perStep = Number(args['per-step']);
  const stepMs = Number(args['step-ms']);
  const extra = Object.fromEntries(
    args.set
      .split(',')
      .filter(Boolean)
      .map((kv) => kv.split('=') as [string, string]),
  );
  const dir = mkdtempSync(join(tmpdir(), 'vigil-notify-cost-'));
  const server = await startRedis({ dataDir: dir });
  const receiver = await startReceiverChild().catch(async (err: unknown) => {
    await server.stop();
    throw err;
  });
  const cleanups: (() => Promise<unknown> | void)[] = [
    () => server.stop(),
    () => receiver.stop(),
    () => rmSync(dir, { recursive: true, force: true }),
  ];
  try {
    await measure(server, receiver, cleanups, count, perStep, stepMs, extra);
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup();
  }
}

async function measure(
  server: LocalService,
  receiver: ReceiverChild,
  cleanups: (() => Promise<unknown> | void)[],
  count: number,
  perStep: number,
  stepMs: number,
  extra: Record<string, string>,
) {
  const keys = createKeys('vigil');
  const config: Config = loadConfig(
    {},
    { ...notifierSettings(receiver.url), ...extra, redisUrl: server.url, roles: 'notifier' },
  );
  const connections = createConnections(config);
  cleanups.push(() => connections.close());
  const redis = connections.command('bench-notify-cost');
  await createTenancyAdmin(adminDeps(redis, keys)).createEnvironment(BENCH_ENV, 'en');
  const admin = createAlertingAdmin({ admin: adminDeps(redis, keys), keys, config, connections });
  cleanups.push(() => admin.close());
  await admin.createChannel(BENCH_ENV, { name: 'hook', type: 'webhook', url: `${receiver.url}/hook` });
  await admin.createRoute(BENCH_ENV, {
    name: 'route',
    channels: ['hook'],
    sensor: 'Temperature',
    minStatus: 'WARNING',
  });
  const notifier = startNotifier({
    config,
    connections,
    keys,
    log: createLogger('warn'),
    metrics: new Registry(),
  });
  cleanups.push(() => notifier.close());

  let sequence = 0;
  const event = (sensorName: string): EventRecord => {
    const device = `device_${sequence % 1000}`;
    return {
      id: `ev-${process.pid}-${sequence++}`,
      env: BENCH_ENV,
      deviceName: device,
      displayName: `Display ${device}`,
      sensorName,
      sensorType: 'tempC',
      sensorValue: 26.1,
      eventStatus: 'WARNING',
      eventCategory: 'Sensors',
      eventMessage: `${sensorName} - Above 25 °C - WARNING - 26.1 °C`,
      receivedMs: Date.now(),
    };
  };
  const outboxSettled = async () => {
    const groups = (await redis.xinfo('GROUPS', keys.eventOutbox())) as unknown[][];
    return groups.every((g) => {
      const f = new Map<unknown, unknown>();
      for (let i = 0; i + 1 < g.length; i += 2) f.set(g[i], g[i + 1]);
      return Number(f.get('pending')) === 0 && Number(f.get('lag')) === 0;
    });
  };
  const until = async (done: () => Promise<boolean>) => {
    const deadline = Date.now() + 60_000;
    while (!(await done())) {
      if (Date.now() > deadline) throw new Error('the notifier did not finish the round within 60 s');
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  /** Redis's commands so far: name → [calls, µs]. */
  const commandStats = async () => {
    const stats = new Map<string, [number, number]>();
    for (const line of (await redis.info('commandstats')).split('\n')) {
      const m = /^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/.exec(line);
      if (m) stats.set(m[1]!, [Number(m[2]), Number(m[3])]);
    }
    return stats;
  };

  /** One round of `count` events; CPU µs per event of this process and of Redis. */
  async function round(matching: boolean) {
    const pid = server.process?.pid ?? 0;
    const commands0 = args.commands ? await commandStats() : undefined;
    const io0 = syscalls();
    const before = await receiver.received();
    const redis0 = cpuSeconds(pid);
    const self0 = process.cpuUsage();
    const startMs = Date.now();
    for (let sent = 0, step = 0; sent < count; step++) {
      const m = redis.multi();
      for (let k = 0; k < perStep && sent < count; k++, sent++) {
        const json = JSON.stringify(event(matching ? 'Temperature' : 'Humidity'));
        m.xadd(keys.eventOutbox(), '*', 'e', json);
      }
      await m.exec();
      const wait = startMs + (step + 1) * stepMs - Date.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    }
    const expected = before + (matching ? count : 0);
    await until(async () => (await outboxSettled()) && (await receiver.received()) >= expected);
    const self = process.cpuUsage(self0);
    const got = (await receiver.received()) - before;
    if (commands0) {
      const rows = [...(await commandStats())]
        .map(([name, [calls, us]]) => {
          const [calls0, us0] = commands0.get(name) ?? [0, 0];
          return { name, calls: (calls - calls0) / count, us: (us - us0) / count };
        })
        .filter((r) => r.calls > 0.01)
        .sort((a, b) => b.us - a.us);
      process.stdout.write(
        `${matching ? 'with' : 'without'}, per event: ${rows.map((r) => `${r.name} ${r.calls.toFixed(2)}× ${r.us.toFixed(1)} µs`).join(', ')}\n`,
      );
    }
    const io = syscalls();
    const perEvent = (k: 'reads' | 'writes') => ((io[k] - io0[k]) / count).toFixed(2);
    process.stdout.write(
      `${matching ? 'with' : 'without'}: this process's system calls per event: ${perEvent('reads')} reads, ${perEvent('writes')} writes; CPU µs per event: user ${(self.user / count).toFixed(0)}, system ${(self.system / count).toFixed(0)}\n`,
    );
    return {
      self: (self.user + self.system) / count,
      redis: ((cpuSeconds(pid) - redis0) * 1e6) / count,
      got,
    };
  }

  {
    await round(true); // warm-up
    const diffs: { self: number; redis: number }[] = [];
    for (let r = 1; r <= Number(args.rounds); r++) {
      const without = await round(false);
      const withRoute = await round(true);
      const d = { self: withRoute.self - without.self, redis: withRoute.redis - without.redis };
      diffs.push(d);
      process.stdout.write(
        `pair ${r}: CPU per event without ${without.self.toFixed(0)} + ${without.redis.toFixed(0)} µs, ` +
          `with ${withRoute.self.toFixed(0)} + ${withRoute.redis.toFixed(0)} µs (${withRoute.got} delivered): ` +
          `a notification costs this process ${d.self.toFixed(0)} µs, Redis ${d.redis.toFixed(0)} µs\n`,
      );
    }
    const median = (xs: number[]) => xs.toSorted((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    const self = median(diffs.map((d) => d.self));
    const red = median(diffs.map((d) => d.redis));
    process.stdout.write(
      `median: a notification costs this process ${self.toFixed(0)} µs, Redis ${red.toFixed(0)} µs, ${(self + red).toFixed(0)} µs in all\n`,
    );
  }
}
