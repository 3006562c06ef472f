/**
 * `npm run demo` (scripts/demo.ts) and `npm start` (scripts/start.ts) as child processes against the
 * integration run's Redis and InfluxDB (their own key prefix and database, every port chosen by the
 * kernel, no local servers started, its settings file in a temporary directory, so never `var/`,
 * the checkout's config/vigil.env or a default port): where the demo listens, the settings file it
 * writes for the vigil command, and a start refused with the demo's public secrets key.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject, describe, expect, it, onTestFinished } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import { PUBLIC_DEMO } from '../../src/config/public-demo.ts';
import { testId } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';
import { isLoopback, listenersOf } from '../support/listeners.ts';

interface Script {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
}

/** Runs scripts/<name>.ts with a private configuration plus `env`; killed when the test ends. */
function runScript(name: 'demo' | 'start', env: Record<string, string> = {}): Script {
  const child = spawn(process.execPath, ['--no-node-snapshot', `scripts/${name}.ts`], {
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      VIGIL_NO_LOCAL_SERVICES: '1',
      VIGIL_CONFIG_FILE: '',
      VIGIL_REDIS_URL: inject('redisUrl'),
      VIGIL_INFLUX_URL: inject('influxUrl'),
      VIGIL_KEY_PREFIX: testId(),
      VIGIL_INFLUX_DATABASE: testId(),
      VIGIL_API_PORT: '0',
      VIGIL_GATEWAY_PORT: '0',
      VIGIL_MQTT_PORT: '0',
      VIGIL_OPS_PORT: '0',
      VIGIL_LOG_LEVEL: 'warn',
      DEMO_RECEIVER_PORT: '0',
      VIGIL_DEMO_SIMULATOR: '0',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout?.setEncoding('utf8').on('data', (s: string) => (stdout += s));
  child.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr += s));
  onTestFinished(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, stdout: () => stdout, stderr: () => stderr };
}

const hasExited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

describe('npm run demo', () => {
  it(
    'listens on loopback addresses only: API, gateway, MQTT, ops and the demo receiver',
    { timeout: 120_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'vigil-demo-settings-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const settingsFile = join(dir, 'vigil.env');
      const prefix = testId();
      const demo = runScript('demo', { VIGIL_DEMO_CONFIG_FILE: settingsFile, VIGIL_KEY_PREFIX: prefix });
      await eventually(() => demo.stdout().includes('Ctrl-C stops everything.') || hasExited(demo.child), {
        timeoutMs: 90_000,
        intervalMs: 100,
        message: 'the demo to print its commands',
      });
      expect(
        hasExited(demo.child),
        `${demo.child.exitCode} ${demo.child.signalCode} ${demo.stdout()} ${demo.stderr()}`,
      ).toBe(false);
      const listeners = listenersOf([demo.child.pid ?? -1]);
      expect(listeners.length, JSON.stringify(listeners)).toBeGreaterThanOrEqual(5);
      expect(listeners.filter((l) => !isLoopback(l.address))).toEqual([]);
      // Its settings file holds what a vigil command needs to reach it, its key among them, and
      // only its owner can read it; the demo says how to point the command at it.
      expect(statSync(settingsFile).mode & 0o777).toBe(0o600);
      const written = loadConfig({ VIGIL_CONFIG_FILE: settingsFile });
      expect([written.demo, written.secretsKey, written.keyPrefix, written.redisUrl]).toEqual([
        true,
        PUBLIC_DEMO.secretsKey,
        prefix,
        inject('redisUrl'),
      ]);
      expect(demo.stdout()).toContain(`VIGIL_CONFIG_FILE=${settingsFile} npx vigil`);
      demo.child.kill('SIGINT');
      await eventually(() => hasExited(demo.child), {
        timeoutMs: 30_000,
        message: 'the demo to stop on SIGINT',
      });
      expect(demo.child.exitCode).toBe(0);
    },
  );
});

describe("npm run demo's settings file", () => {
  it(
    'is never the one npm start reads: the demo refuses to write its public key there',
    { timeout: 60_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'vigil-demo-settings-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const startFile = join(dir, 'vigil.env');
      const demo = runScript('demo', { VIGIL_CONFIG_FILE: startFile, VIGIL_DEMO_CONFIG_FILE: startFile });
      await eventually(() => hasExited(demo.child), {
        timeoutMs: 45_000,
        message: 'the demo to refuse and exit',
      });
      expect(demo.child.exitCode).toBe(1);
      expect(existsSync(startFile)).toBe(false);
    },
  );
});

describe('npm start', () => {
  it(
    "refuses to start with the demo's public secrets key, naming VIGIL_SECRETS_KEY and never its value",
    { timeout: 60_000 },
    async () => {
      const start = runScript('start', { VIGIL_SECRETS_KEY: PUBLIC_DEMO.secretsKey });
      await eventually(() => hasExited(start.child), {
        timeoutMs: 45_000,
        message: 'npm start to refuse and exit',
      });
      expect(start.child.exitCode).toBe(1);
      expect(start.stderr()).toContain('VIGIL_SECRETS_KEY');
      expect(start.stderr()).not.toContain(PUBLIC_DEMO.secretsKey.slice(0, 12));
    },
  );
});
