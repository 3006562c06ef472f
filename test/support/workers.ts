/** Worker processes started as real child processes (`node src/main.ts` with VIGIL_ROLES=worker). */
import { spawn, type ChildProcess } from 'node:child_process';
import { onTestFinished } from 'vitest';
import type { Config } from '../../src/config/schema.ts';
import { SETTINGS } from '../../src/config/schema.ts';

const root = new URL('../../', import.meta.url).pathname;

export interface ChildVigil {
  process: ChildProcess;
  /** Resolves when the process has exited. */
  exited: Promise<number | null>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts `node src/main.ts` with the given config (as VIGIL_ variables) and overrides. */
export function spawnVigil(config: Config, overrides: Record<string, string> = {}): ChildVigil {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '' };
  for (const [key, s] of Object.entries(SETTINGS)) {
    const value = (config as unknown as Record<string, unknown>)[key];
    if (value === undefined) continue;
    env[s.env] = Array.isArray(value) ? value.join(',') : String(value);
  }
  Object.assign(
    env,
    { VIGIL_OPS_PORT: '0', VIGIL_API_PORT: '0', VIGIL_GATEWAY_PORT: '0', VIGIL_MQTT_PORT: '0' },
    overrides,
  );
  const child = spawn(`${root}node_modules/.bin/node`, ['--no-node-snapshot', 'src/main.ts'], {
    cwd: root,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const handle: ChildVigil = {
    process: child,
    exited,
    async kill(signal = 'SIGTERM') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
  onTestFinished(() => handle.kill('SIGKILL'));
  return handle;
}
