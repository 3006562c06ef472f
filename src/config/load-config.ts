import { SETTINGS, type Config } from './schema.ts';

/** Raised when configuration is invalid; the message names the environment variable. */
export class ConfigError extends Error {
  override name = 'ConfigError';
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
  const problems: string[] = [];
  for (const [key, s] of Object.entries(SETTINGS)) {
    const override = overrides[key as keyof Config];
    const raw = override !== undefined ? String(override) : (env[s.env] ?? s.default);
    const parsed = s.schema.safeParse(raw);
    if (parsed.success) result[key] = parsed.data;
    else
      problems.push(
        `${s.env}=${JSON.stringify(raw)}: ${parsed.error.issues.map((i) => i.message).join('; ')}`,
      );
  }
  for (const name of Object.keys(env)) {
    if (
      name.startsWith('VIGIL_') &&
      !Object.values(SETTINGS).some((s) => s.env === name) &&
      !IGNORED_VARS.has(name)
    ) {
      problems.push(`${name}: unknown setting (see docs/configuration.md)`);
    }
  }
  if (problems.length > 0) throw new ConfigError(`invalid configuration: ${problems.join(' | ')}`);
  return result as Config;
}

/** VIGIL_ variables read by scripts and tests rather than by the service. */
const IGNORED_VARS = new Set([
  'VIGIL_TEST_LONG',
  'VIGIL_NO_LOCAL_SERVICES',
  'VIGIL_DEMO_SIMULATOR',
  'VIGIL_CHROMIUM_PATH',
  'VIGIL_UPDATE_SCREENSHOTS',
]);

/** Rows of the README configuration table, in schema order. */
export function describeConfig(): { env: string; default: string; description: string }[] {
  return Object.values(SETTINGS).map((s) => ({ env: s.env, default: s.default, description: s.description }));
}
