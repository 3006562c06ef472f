import ipaddr from 'ipaddr.js';
import { AppError } from '../errors/app-error.ts';
import { maskUrl } from '../lib/mask-url.ts';
import { crossFieldProblems } from './cross-field-rules.ts';
import { PUBLIC_DEMO, PUBLIC_DEMO_REFUSALS } from './public-demo.ts';
import { SETTINGS, type Config, type SecretKind } from './schema.ts';

type ConfigErrorCode = 'CONFIG_INVALID' | 'DEMO_SECRETS_KEY_REFUSED';

/**
 * Raised when configuration is refused. The message names each environment variable at fault and
 * what is wrong with it, never a secret's value; `variables` lists those variables.
 */
export class ConfigError extends AppError {
  override name = 'ConfigError';
  readonly variables: readonly string[];

  constructor(code: ConfigErrorCode, message: string, variables: readonly string[]) {
    super(code, message);
    this.variables = variables;
  }
}

interface Problem {
  /** The variables at fault: one, or two that contradict each other. */
  variables: readonly string[];
  text: string;
  code: ConfigErrorCode;
}

/**
 * Reads Vigil's configuration from environment variables (the only reader of `process.env`).
 * `overrides` (by config key) win over the environment; tests use them.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Record<keyof Config, string | number | boolean>> = {},
): Config {
  const result: Record<string, unknown> = {};
  const problems: Problem[] = [];
  for (const [key, s] of Object.entries(SETTINGS)) {
    const override = overrides[key as keyof Config];
    const raw = override !== undefined ? String(override) : (env[s.env] ?? s.default);
    const parsed = s.schema.safeParse(raw);
    if (parsed.success) result[key] = parsed.data;
    else
      problems.push({
        variables: [s.env],
        text: `${s.env}${shownValue(raw, s.secret)}: ${parsed.error.issues.map((i) => i.message).join('; ')}`,
        code: 'CONFIG_INVALID',
      });
  }
  for (const name of Object.keys(env)) {
    if (
      name.startsWith('VIGIL_') &&
      !Object.values(SETTINGS).some((s) => s.env === name) &&
      !IGNORED_VARS.has(name)
    ) {
      problems.push({
        variables: [name],
        text: `${name}: unknown setting (see docs/configuration.md)`,
        code: 'CONFIG_INVALID',
      });
    }
  }
  const config = result as Config;
  // Rules between settings compare parsed values: only once every setting parsed.
  const settingsFailed = problems.length > 0;
  problems.push(...demoProblems(config, settingsFailed));
  if (!settingsFailed)
    problems.push(...crossFieldProblems(config).map((p) => ({ ...p, code: 'CONFIG_INVALID' as const })));
  if (problems.length > 0) throw configError(problems);
  return config;
}

function configError(problems: Problem[]): ConfigError {
  const variables = [...new Set(problems.flatMap((p) => p.variables))];
  const text = problems.map((p) => p.text).join(' | ');
  return problems.every((p) => p.code === 'DEMO_SECRETS_KEY_REFUSED')
    ? new ConfigError('DEMO_SECRETS_KEY_REFUSED', text, variables)
    : new ConfigError('CONFIG_INVALID', `invalid configuration: ${text}`, variables);
}

/**
 * The demo's published secrets are accepted only with VIGIL_DEMO, which listens on loopback
 * addresses only; without it, the demo's secrets key stops the start. Checked once every setting
 * parsed (`settingsFailed`: some did not, so the values cannot be compared).
 */
function demoProblems(config: Config, settingsFailed: boolean): Problem[] {
  if (settingsFailed) return [];
  if (!config.demo) {
    return config.secretsKey === PUBLIC_DEMO.secretsKey
      ? [
          {
            variables: [SETTINGS.secretsKey.env],
            text: PUBLIC_DEMO_REFUSALS.secretsKey,
            code: 'DEMO_SECRETS_KEY_REFUSED',
          },
        ]
      : [];
  }
  return (['host', 'opsHost'] as const)
    .filter((key) => !isLoopbackHost(config[key]))
    .map((key) => ({
      variables: [SETTINGS[key].env],
      text: `${SETTINGS[key].env}=${JSON.stringify(config[key])}: VIGIL_DEMO accepts the demo's published credentials, so it listens on loopback addresses only (127.0.0.1, ::1 or localhost)`,
      code: 'CONFIG_INVALID',
    }));
}

const isLoopbackHost = (host: string): boolean =>
  host === 'localhost' || (ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback');

/**
 * `=<value>` as a configuration error may show it: nothing for a secret; a URL without its user,
 * password and query values (nothing when it is not a URL, as it may still hold a password).
 */
function shownValue(raw: string, secret: SecretKind | undefined): string {
  if (secret === undefined) return `=${JSON.stringify(raw)}`;
  if (secret === 'value') return ' (value not shown: a secret)';
  const masked = maskUrl(raw);
  return masked === undefined ? ' (value not shown: it may hold a password)' : `=${JSON.stringify(masked)}`;
}

/** VIGIL_ variables read by scripts and tests rather than by the service. */
const IGNORED_VARS = new Set([
  'VIGIL_TEST_LONG',
  'VIGIL_NO_LOCAL_SERVICES',
  'VIGIL_DEMO_SIMULATOR',
  'VIGIL_CHROMIUM_PATH',
  'VIGIL_UPDATE_SCREENSHOTS',
]);

/** Rows of the README configuration table, in schema order; secrets say they are never printed. */
export function describeConfig(): { env: string; default: string; description: string }[] {
  return Object.values(SETTINGS).map((s) => ({
    env: s.env,
    default: s.default,
    description: s.secret === undefined ? s.description : `${s.description} ${SECRET_NOTES[s.secret]}`,
  }));
}

const SECRET_NOTES: Record<SecretKind, string> = {
  value: 'A secret: its value is never printed, not even in a configuration error.',
  url: 'Printed (in a configuration error) without its user, password and query values.',
};
