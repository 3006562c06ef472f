/** Worker processes started as real child processes (`node src/main.ts` with VIGIL_ROLES=worker). */
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { onTestFinished } from 'vitest';
import type { Config } from '../../src/config/schema.ts';
import { SETTINGS } from '../../src/config/schema.ts';

const root = new URL('../../', import.meta.url).pathname;
/** Longest wait for a child's 'Vigil started' line, in ms. */
const STARTUP_BOUND_MS = 60_000;

/** A config value as its VIGIL_ variable carries it. */
function settingText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  // `<key>=<value>,…` (VIGIL_MQTT_BRIDGE_CHIRPSTACK).
  if (value instanceof Map)
    return [...(value as Map<unknown, unknown>)].map(([k, v]) => `${String(k)}=${String(v)}`).join(',');
  return JSON.stringify(value);
}

export interface ChildVigil {
  process: ChildProcess;
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<void>;
  /** Everything written to stdout and stderr so far (with `captureOutput`; else ''). */
  output(): string;
  /**
   * The ports from its 'Vigil started' log line, once it has started (needs `captureOutput` and a
   * log level of info or lower). Rejects, with what it printed, when it exits first or has not
   * started within a minute.
   */
  ports(): Promise<{ api: number; gateway: number; mqtt: number; ops: number }>;
}

/** Fetches a child's /metrics and answers the value of a counter without labels (0 when absent). */
export async function childCounter(child: ChildVigil, name: string): Promise<number> {
  const { ops } = await child.ports();
  const text = await (
    await fetch(`http://127.0.0.1:${ops}/metrics`, { signal: AbortSignal.timeout(10_000) })
  ).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return line === undefined ? 0 : Number(line.split(' ')[1]);
}

/** Starts `node src/main.ts` with the given config (as VIGIL_ variables) and overrides. */
export function spawnVigil(
  config: Config,
  overrides: Record<string, string> = {},
  opts: {
    captureOutput?: boolean;
    /** Entry script, relative to the project (src/main.ts by default). */ script?: string;
  } = {},
): ChildVigil {
  // No settings file (config/vigil.env of the checkout): the config is all there is.
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', VIGIL_CONFIG_FILE: '' };
  for (const [key, s] of Object.entries(SETTINGS)) {
    const value = (config as unknown as Record<string, unknown>)[key];
    if (value === undefined) continue;
    env[s.env] = Array.isArray(value) ? value.join(',') : settingText(value);
  }
  Object.assign(
    env,
    { VIGIL_OPS_PORT: '0', VIGIL_API_PORT: '0', VIGIL_GATEWAY_PORT: '0', VIGIL_MQTT_PORT: '0' },
    overrides,
  );
  const child = spawn(`${root}node_modules/.bin/node`, ['--no-node-snapshot', opts.script ?? 'src/main.ts'], {
    cwd: root,
    env,
    stdio: opts.captureOutput ? ['ignore', 'pipe', 'pipe'] : ['ignore', 'ignore', 'inherit'],
  });
  const chunks: Buffer[] = [];
  child.stdout?.on('data', (d: Buffer) => chunks.push(d));
  child.stderr?.on('data', (d: Buffer) => chunks.push(d));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const handle: ChildVigil = {
    process: child,
    exited,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
    output: () => Buffer.concat(chunks).toString('utf8'),
    async ports() {
      const giveUpAt = Date.now() + STARTUP_BOUND_MS;
      for (;;) {
        for (const line of handle.output().split('\n')) {
          if (!line.includes('"Vigil started"')) continue;
          return (JSON.parse(line) as { ports: { api: number; gateway: number; mqtt: number; ops: number } })
            .ports;
        }
        if (child.exitCode !== null || child.signalCode !== null)
          throw new Error(`the process exited before it started; it printed:\n${handle.output()}`);
        if (Date.now() >= giveUpAt)
          throw new Error(
            `the process had not started after ${STARTUP_BOUND_MS} ms; it printed:\n${handle.output()}`,
          );
        // Its last output can come before its exit: wait for whichever is next.
        await Promise.race([
          exited,
          new Promise<void>((resolve) => child.stdout?.once('data', () => resolve()) ?? resolve()),
          sleep(giveUpAt - Date.now(), undefined, { ref: false }),
        ]);
      }
    },
  };
  onTestFinished(() => handle.kill('SIGKILL'));
  return handle;
}
