/**
 * Starts bench/vigil-host.ts (Vigil with chosen roles) as a child process, so that the load
 * generators in the bench process do not share its event loop, and talks to it over IPC.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SETTINGS } from '../../src/config/schema.ts';
import type { HostMessage, HostPorts } from '../vigil-host.ts';

const root = new URL('../../', import.meta.url).pathname;
export const PROFILE_DIR = `${root}bench/results/profiles`;

export type Settings = Partial<Record<keyof typeof SETTINGS, string | number | boolean>>;

/** What the bench changes of a Vigil process beyond its settings (bench/vigil-host.ts's arguments). */
export interface HostOptions {
  /** false: the worker records no late values (measuring what that costs). */
  lateWrites?: boolean;
}

export interface VigilProcess {
  ports: HostPorts;
  pid: number;
  rssBytes(): Promise<number>;
  /** V8 heap in use right after a full garbage collection (what the process really holds). */
  heapAfterGcBytes(): Promise<number>;
  /** process.memoryUsage() of the process, without a collection first. */
  memory(): Promise<NodeJS.MemoryUsage & { spaces: Record<string, number> }>;
  /** Prometheus counters and gauges of the process, by name (labels summed). */
  metrics(): Promise<Map<string, number>>;
  stop(): Promise<void>;
}

function envFor(settings: Settings): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '',
    // The settings are the bench's alone, not those of the checkout's config/vigil.env.
    VIGIL_CONFIG_FILE: '',
    // Node's compile cache keeps each module's TypeScript stripped and compiled: a process started
    // after the first one is ready in half the time (the drain counts the worker's start-up).
    NODE_COMPILE_CACHE: process.env.NODE_COMPILE_CACHE ?? join(tmpdir(), 'vigil-node-compile-cache'),
  };
  for (const [key, value] of Object.entries(settings)) {
    const s = (SETTINGS as Record<string, { env: string } | undefined>)[key];
    if (!s) throw new Error(`unknown Vigil setting ${key} (see src/config/schema.ts)`);
    if (value !== undefined) env[s.env] = String(value);
  }
  return env;
}

function nextMessage<T extends HostMessage['type']>(
  child: ChildProcess,
  type: T,
  timeoutMs: number,
): Promise<Extract<HostMessage, { type: T }>> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      reject(new Error(`Vigil host: no '${type}' within ${timeoutMs} ms`));
    }, timeoutMs);
    const onMessage = (m: HostMessage) => {
      if (m.type !== type) return;
      cleanup();
      resolve(m as Extract<HostMessage, { type: T }>);
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`Vigil host exited (code ${code}) while waiting for '${type}'`));
    };
    const cleanup = () => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}

/** Parses Prometheus text format into name → value (series of one name summed over labels). */
export function parseMetrics(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!match) continue;
    const value = Number(match[3]);
    if (Number.isFinite(value)) out.set(match[1]!, (out.get(match[1]!) ?? 0) + value);
  }
  return out;
}

export async function startVigilProcess(
  settings: Settings,
  opts: { profile?: boolean; label?: string; host?: HostOptions } = {},
): Promise<VigilProcess> {
  // BENCH_NODE_FLAGS: extra node/V8 flags for the Vigil processes (heap sizing experiments).
  const extraFlags = (process.env.BENCH_NODE_FLAGS ?? '').split(' ').filter(Boolean);
  const execArgv = ['--no-node-snapshot', '--expose-gc', ...extraFlags];
  if (opts.profile) {
    mkdirSync(PROFILE_DIR, { recursive: true });
    execArgv.push(
      '--cpu-prof',
      `--cpu-prof-dir=${PROFILE_DIR}`,
      `--cpu-prof-name=${opts.label ?? 'vigil'}-${Date.now()}.cpuprofile`,
    );
  }
  const args = opts.host?.lateWrites === false ? ['--no-late-writes'] : [];
  const child = fork(`${root}bench/vigil-host.ts`, args, {
    cwd: root,
    env: envFor(settings),
    execArgv,
    // Vigil's log (pino, stdout) goes to the bench's stderr, beside its progress lines.
    stdio: ['ignore', 2, 2, 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  let ready: Extract<HostMessage, { type: 'ready' }>;
  try {
    ready = await nextMessage(child, 'ready', 60_000);
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  let stopping: Promise<void> | undefined;
  return {
    ports: ready.ports,
    pid: child.pid ?? 0,
    async rssBytes() {
      const reply = nextMessage(child, 'stats', 10_000);
      child.send({ type: 'stats' });
      return (await reply).rssBytes;
    },
    async heapAfterGcBytes() {
      const reply = nextMessage(child, 'stats', 30_000);
      child.send({ type: 'stats', gc: true });
      return (await reply).heapUsedBytes;
    },
    async memory() {
      const reply = nextMessage(child, 'stats', 10_000);
      child.send({ type: 'stats' });
      const { memory, spaces } = await reply;
      return { ...memory, spaces };
    },
    async metrics() {
      const res = await fetch(`http://127.0.0.1:${ready.ports.metrics}/metrics`);
      return parseMetrics(await res.text());
    },
    stop: () =>
      (stopping ??= (async () => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const killer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        child.send({ type: 'stop' });
        await exited;
        clearTimeout(killer);
      })()),
  };
}
