/**
 * What every `vigil` command shares: configuration and its Redis connections (opened on first use
 * from one connection factory, closed on exit), the tenancy store and admin, and output as text or
 * `--json`.
 */
import { Command, InvalidArgumentError } from 'commander';
import { AppError } from '../errors/app-error.ts';
import { loadConfig } from '../config/load-config.ts';
import { maskUrl } from '../lib/mask-url.ts';
import type { Config } from '../config/schema.ts';
import type { Redis } from '../redis/connect.ts';
import { createConnections, type Connections } from '../redis/connections.ts';
import type { DefinitionScope } from '../tenancy/tenancy-keys.ts';
import { adminDeps, createKeys, type Keys } from '../keys.ts';
import { createTenancyAdmin, type TenancyAdmin } from '../tenancy/tenancy-admin.ts';
import { createTenancyStore, type TenancyStore } from '../tenancy/tenancy-store.ts';
import { DATA_LAYOUT } from '../migrations.ts';
import { refuseNewerLayout } from '../state/migrations.ts';
import { escapeControls, escapeJsonText } from './terminal-text.ts';
import type { AlertingAdmin } from '../alerting/alerting-admin.ts';
import { cliActor } from '../audit/audit-log.ts';
import { openManagement, type OpenedManagement } from '../management/open-management.ts';
import type { RawBody } from '../management/operation.ts';
import { resolveTarget, type TargetOptions } from './profiles.ts';
import { callRemote, type RemoteTarget } from './remote.ts';
import { SCOPES } from '../tenancy/types.ts';

export interface Services {
  config: Config;
  connections: Connections;
  redis: Redis;
  keys: Keys;
  store: TenancyStore;
  admin: TenancyAdmin;
}

export interface Runtime {
  /** Opens Redis on first use. */
  services(): Promise<Services>;
  /**
   * Runs the management operation at `path` (src/management/) in environment `env` with `input`
   * as its attributes, and resolves to its answer's `data`: the one way a command changes
   * something within an environment, so the CLI and the API share every rule and every change is
   * in the audit log (as `cli:<OS user>`).
   */
  manage<T = unknown>(env: string, path: string, input: Record<string, unknown>, body?: RawBody): Promise<T>;
  /**
   * Reads through the API at `path` (a read-API endpoint or a management operation) in the remote
   * mode; in the direct mode runs the management operation at `path` in this process, or `direct`
   * for a read-API endpoint.
   */
  read<T>(env: string, path: string, input: Record<string, unknown>, direct: () => Promise<T>): Promise<T>;
  /** The remote Vigil of the command line, environment or profile file; null in the direct mode. */
  remote(): RemoteTarget | null;
  /** Takes the command line's global options (--url, --token, --profile), before any command runs. */
  configure(options: TargetOptions): void;
  /** Channels, routes and notifications (loaded on first use: it brings BullMQ). */
  alerting(): Promise<AlertingAdmin>;
  close(): Promise<void>;
  /**
   * Prints `data` as JSON with --json, else `text`: one line per string, control characters shown
   * escaped (a block meant to span lines is passed as its `blockLines`).
   */
  print(json: boolean | undefined, data: unknown, text: string | string[]): void;
  /** A line for stderr that is not a result (hints, warnings), escaped too; suppressed with --json. */
  note(json: boolean | undefined, text: string): void;
}

export function createRuntime(env: NodeJS.ProcessEnv = process.env): Runtime {
  let opened: Promise<Services> | undefined;
  let connections: Connections | undefined;
  let alerting: Promise<AlertingAdmin> | undefined;
  let management: Promise<OpenedManagement> | undefined;
  let targetOptions: TargetOptions = {};
  let target: RemoteTarget | null | undefined;
  /** The environment of the remote mode's token, asked once (the token, not --env, decides). */
  let remoteEnv: Promise<string> | undefined;
  const remote = () => (target ??= resolveTarget(targetOptions, env));

  async function remoteCall<T>(
    to: RemoteTarget,
    envName: string,
    path: string,
    input: Record<string, unknown>,
    body?: RawBody,
  ) {
    const tokenEnv = await (remoteEnv ??= callRemote<{ env: string }>(to, '/tokens/current', {}).then(
      (c) => c.env,
    ));
    if (envName !== '' && envName !== tokenEnv)
      throw new AppError(
        'INVALID_INPUT',
        `--env ${envName}: the token of ${to.source} is of environment ${tokenEnv}; give --env ${tokenEnv}, or another token`,
      );
    return callRemote<T>(to, path, input, body);
  }

  async function runDirect<T>(envName: string, path: string, input: Record<string, unknown>, body?: RawBody) {
    const ops = await (management ??= openDirectManagement());
    // Over HTTP the token's environment exists; here --env names one that may not.
    if (envName !== '') await (await (opened ??= open())).admin.requireEnv(envName);
    const caller = { env: envName, actor: cliActor(), scopes: SCOPES, nowMs: Date.now() };
    return (await ops.run(path, caller, input, body)) as T;
  }

  return {
    services: () => (opened ??= open()),
    configure(options) {
      targetOptions = options;
      target = undefined;
    },
    remote,
    async manage<T>(envName: string, path: string, input: Record<string, unknown>, body?: RawBody) {
      const to = remote();
      return to ? remoteCall<T>(to, envName, path, input, body) : runDirect<T>(envName, path, input, body);
    },
    async read<T>(envName: string, path: string, input: Record<string, unknown>, direct: () => Promise<T>) {
      const to = remote();
      if (to) return remoteCall<T>(to, envName, path, input);
      const ops = await (management ??= openDirectManagement());
      return ops.operations.has(path) ? runDirect<T>(envName, path, input) : direct();
    },
    alerting: () => (alerting ??= openAlerting()),
    async close() {
      if (alerting) await (await alerting.catch(() => undefined))?.close();
      if (management) await (await management.catch(() => undefined))?.close();
      await connections?.close();
    },
    print(json, data, text) {
      const out = json
        ? escapeJsonText(JSON.stringify(data, null, 2))
        : (Array.isArray(text) ? text : [text]).map(escapeControls).join('\n');
      if (out !== '') process.stdout.write(`${out}\n`);
    },
    note(json, text) {
      if (!json) process.stderr.write(`${escapeControls(text)}\n`);
    },
  };

  async function openDirectManagement(): Promise<OpenedManagement> {
    const { config, redis, keys } = await (opened ??= open());
    return openManagement({ config, keys, redis, connections: connections as Connections });
  }

  async function openAlerting(): Promise<AlertingAdmin> {
    // Loaded before Redis is opened: compiling the module would otherwise eat into the wait for
    // Redis, and on a busy machine time the connection out before it had its chance.
    const { createAlertingAdmin } = await import('../alerting/alerting-admin.ts');
    const services = await (opened ??= open());
    const { config, redis, keys } = services;
    return createAlertingAdmin({
      admin: adminDeps(redis, keys),
      keys,
      config,
      connections: services.connections,
    });
  }

  async function open(): Promise<Services> {
    const config = loadConfig(env);
    connections = createConnections(config);
    const redis = connections.command('vigil-cli');
    await waitReady(redis, config.redisUrl);
    const keys = createKeys(config.keyPrefix);
    // Every command that reaches Redis, not only those that write: telling readers from writers
    // command by command would be one more list to keep right, for a case (a command older than
    // the service) whose fix is to use the service's own command.
    await refuseNewerLayout(redis, keys, DATA_LAYOUT);
    return {
      config,
      connections,
      redis,
      keys,
      store: createTenancyStore({ redis, keys }),
      admin: createTenancyAdmin(adminDeps(redis, keys)),
    };
  }
}

async function waitReady(redis: Redis, url: string): Promise<void> {
  if (redis.status === 'ready') return;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      redis.disconnect();
      reject(new AppError('UNAVAILABLE', `cannot reach Redis at ${redactUrl(url)} (VIGIL_REDIS_URL)`));
    }, 3000);
    redis.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

const redactUrl = (url: string) => maskUrl(url) ?? '(the URL, not shown)';

/** Commander's collector of repeated `--label key=value` options. */
export function collectLabel(value: string, labels: Record<string, string> = {}): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq < 1) throw new InvalidArgumentError('expected key=value');
  return { ...labels, [value.slice(0, eq)]: value.slice(eq + 1) };
}

/** Adds a leaf command with `--json`. */
export function leaf(parent: Command, nameAndArgs: string, description: string): Command {
  return parent.command(nameAndArgs).description(description).option('--json', 'print machine-readable JSON');
}

/** Adds the required `--env <env>` option. */
export const withEnv = (cmd: Command) => cmd.requiredOption('--env <env>', 'environment name');

export const scopeFrom = (opts: { env?: string; public?: boolean }): DefinitionScope => {
  if (opts.public && opts.env) throw new InvalidArgumentError('give either --env or --public, not both');
  if (opts.public) return { kind: 'public' };
  if (opts.env) return { kind: 'private', env: opts.env };
  throw new InvalidArgumentError('give --env <env> (private definition) or --public');
};

/** Commander argument parsers that reject bad input as usage errors (exit 2). */
export const parse = {
  positiveInt: (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError('expected a positive whole number');
    return n;
  },
  positiveNumber: (value: string): number => {
    const n = Number(value);
    if (!Number.isFinite(n) || n <= 0 || value.trim() === '')
      throw new InvalidArgumentError('expected a positive number');
    return n;
  },
  locale: (value: string): 'en' | 'nl' => {
    if (value !== 'en' && value !== 'nl') throw new InvalidArgumentError('expected en or nl');
    return value;
  },
};

const DURATION_UNITS_MS: Record<string, number> = { s: 1e3, m: 60e3, h: 3600e3, d: 86400e3, w: 7 * 86400e3 };

/** Epoch ms of `nowMs + 30d`-style durations or of an ISO 8601 time; 0 for `never`. */
export function parseExpiry(value: string, nowMs: number): number {
  if (value === 'never') return 0;
  const d = /^(\d+)([smhdw])$/.exec(value);
  if (d) return nowMs + Number(d[1]) * (DURATION_UNITS_MS[d[2] ?? 's'] ?? 1000);
  const t = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : NaN;
  if (Number.isNaN(t))
    throw new InvalidArgumentError('expected a duration such as 30d, 12h, 90m, an ISO time, or never');
  if (t <= nowMs) throw new InvalidArgumentError('the time must be in the future');
  return t;
}

/** Formats rows as left-aligned columns, control characters in cells shown escaped. */
export function table(header: string[], cells: string[][]): string[] {
  if (cells.length === 0) return [];
  const rows = cells.map((r) => r.map(escapeControls));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(header), ...rows.map(line)];
}
