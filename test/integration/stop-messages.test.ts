/**
 * What a person sees when they stop Vigil: `npm start` (scripts/start.ts) and the container's entry
 * (src/main.ts) as child processes against the integration run's Redis and InfluxDB (their own key
 * prefix and database, every port chosen by the kernel, no local servers started) say that they are
 * stopping, then that they stopped, and exit 0.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { describe, expect, inject, it, onTestFinished } from 'vitest';
import { testId } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

interface Child {
  child: ChildProcess;
  output: () => string;
}

/** Runs `file` with a private configuration; killed when the test ends. */
function run(file: string, env: Record<string, string>): Child {
  const child = spawn(process.execPath, ['--no-node-snapshot', file], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      VIGIL_NO_LOCAL_SERVICES: '1',
      VIGIL_CONFIG_FILE: '', // not the checkout's config/vigil.env
      VIGIL_REDIS_URL: inject('redisUrl'),
      VIGIL_INFLUX_URL: inject('influxUrl'),
      VIGIL_KEY_PREFIX: testId(),
      VIGIL_INFLUX_DATABASE: testId(),
      VIGIL_API_PORT: '0',
      VIGIL_GATEWAY_PORT: '0',
      VIGIL_MQTT_PORT: '0',
      VIGIL_OPS_PORT: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.setEncoding('utf8').on('data', (s: string) => (output += s));
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (output += s));
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, output: () => output };
}

const hasExited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

/** Waits for `text` in the child's output (or its exit). */
async function waitFor(c: Child, text: string | RegExp, message: string): Promise<void> {
  await eventually(
    () =>
      (typeof text === 'string' ? c.output().includes(text) : text.test(c.output())) || hasExited(c.child),
    {
      timeoutMs: 60_000,
      intervalMs: 100,
      message,
    },
  );
  expect(hasExited(c.child), c.output()).toBe(false);
}

/** Stops the child with `signal` and resolves with its exit code once it has exited. */
async function stop(c: Child, signal: NodeJS.Signals): Promise<number | null> {
  c.child.kill(signal);
  await eventually(() => hasExited(c.child), {
    timeoutMs: 30_000,
    message: `the process to stop on ${signal}`,
  });
  return c.child.exitCode;
}

describe('stopping Vigil', () => {
  it('npm start says "stopping…" on Ctrl-C, then "stopped", and exits 0', { timeout: 120_000 }, async () => {
    const start = run('scripts/start.ts', { VIGIL_LOG_LEVEL: 'warn' });
    await waitFor(start, '[vigil] read API http://', 'npm start to print its addresses');
    expect(await stop(start, 'SIGINT')).toBe(0);
    const lines = start.output().split('\n');
    const stopping = lines.indexOf('[vigil] stopping…');
    expect(stopping).toBeGreaterThan(-1);
    expect(lines.indexOf('[vigil] stopped', stopping)).toBeGreaterThan(stopping);
  });

  it(
    'the container’s process logs "stopping" on SIGTERM, then "stopped", and exits 0',
    { timeout: 120_000 },
    async () => {
      const main = run('src/main.ts', { VIGIL_LOG_LEVEL: 'info' });
      await waitFor(main, '"msg":"Vigil started"', 'the process to start');
      expect(await stop(main, 'SIGTERM')).toBe(0);
      const messages = main
        .output()
        .split('\n')
        .flatMap((line) => (line.startsWith('{') ? [(JSON.parse(line) as { msg?: string }).msg] : []));
      const stopping = messages.indexOf('stopping');
      expect(stopping).toBeGreaterThan(-1);
      expect(messages.indexOf('stopped', stopping)).toBeGreaterThan(stopping);
    },
  );
});
