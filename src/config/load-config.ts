import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ipaddr from 'ipaddr.js';
import { AppError } from '../errors/app-error.ts';
import { maskUrl } from '../lib/mask-url.ts';
import { messageOf } from '../lib/message-of.ts';
import { crossFieldProblems } from './cross-field-rules.ts';
import { PUBLIC_DEMO, PUBLIC_DEMO_REFUSALS } from './public-demo.ts';
import { SETTINGS, type Config, type SecretKind } from './schema.ts';
import { recordSources, type Origin } from './setting-source.ts';
import { readSettingsFile, type SettingsFile, type SettingsLine } from './settings-file.ts';

type ConfigErrorCode = 'CONFIG_INVALID' | 'DEMO_SECRETS_KEY_REFUSED';

/** A place in a settings file: the file, and the line when one line is at fault. */
export interface SettingsPlace {
  file: string;
  line?: number;
}

/**
 * Raised when configuration is refused. The message names each environment variable at fault and
 * what is wrong with it, never a secret's value; `variables` lists those variables, `places` the
 * settings-file lines (or files) at fault.
 */
export class ConfigError extends AppError {
  override name = 'ConfigError';
  readonly variables: readonly string[];
  readonly places: readonly SettingsPlace[];

  constructor(
    code: ConfigErrorCode,
    message: string,
    variables: readonly string[],
    places: readonly SettingsPlace[] = [],
  ) {
    super(code, message);
    this.variables = variables;
    this.places = places;
  }
}

interface Problem {
  /** The variables at fault: one, or two that contradict each other; none for a malformed line. */
  variables: readonly string[];
  text: string;
  code: ConfigErrorCode;
  place?: SettingsPlace;
}

const FILE_VAR = SETTINGS.configFile.env;

/** The checkout's settings file, read when VIGIL_CONFIG_FILE is not set: config/vigil.env. */
export const DEFAULT_SETTINGS_FILE = join(
  dirname(fileURLToPath(import.meta.url)),
  '..',
  '..',
  SETTINGS.configFile.default,
);

export interface LoadConfigOptions {
  /**
   * The settings file to read whatever VIGIL_CONFIG_FILE says; it must exist (`npm run demo`
   * reads its own, never the service's).
   */
  file?: string;
  /**
   * The settings file read when `env` sets no VIGIL_CONFIG_FILE, if it exists. By default
   * DEFAULT_SETTINGS_FILE when `env` is `process.env`, and none for any other `env`: a test that
   * passes variables of its own reads no file it does not name.
   */
  defaultFile?: string;
}

/**
 * Reads Vigil's configuration from environment variables and the settings file (the only reader
 * of `process.env` and of that file). The environment wins over the file, the file over the
 * defaults; `overrides` (by config key) win over both, and tests use them.
 */
export function loadConfig(
  env: NodeJS.ProcessEnv = process.env,
  overrides: Partial<Record<keyof Config, string | number | boolean>> = {},
  options: LoadConfigOptions = {},
): Config {
  const problems: Problem[] = [];
  const wanted = settingsFileFor(env, options);
  const file = wanted === undefined ? undefined : readFile(wanted, problems);
  const fromFile = fileSettings(file, problems);
  const result: Record<string, unknown> = {};
  const of: Record<string, Origin> = {};
  for (const [key, s] of Object.entries(SETTINGS)) {
    const override = overrides[key as keyof Config];
    const [raw, origin] = pick(override, env[s.env], fromFile.get(s.env), s.default);
    of[key] = origin;
    const parsed = s.schema.safeParse(raw);
    if (parsed.success) result[key] = parsed.data;
    else
      problems.push({
        variables: [s.env],
        text: located(
          origin,
          `${s.env}${shownValue(raw, s.secret)}: ${parsed.error.issues.map((i) => i.message).join('; ')}`,
        ),
        code: 'CONFIG_INVALID',
        ...placeOf(origin),
      });
  }
  // The file that was read (its absolute path), not the text of VIGIL_CONFIG_FILE.
  result.configFile = file?.path;
  for (const name of Object.keys(env)) {
    if (name.startsWith('VIGIL_') && !SETTING_NAMES.has(name) && !IGNORED_VARS.has(name)) {
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
  problems.push(...demoProblems(config, settingsFailed, of));
  if (!settingsFailed)
    problems.push(...crossFieldProblems(config).map((p) => ({ ...p, code: 'CONFIG_INVALID' as const })));
  if (problems.length > 0) throw configError(problems);
  recordSources(config, { file: wanted?.path, of });
  return config;
}

/**
 * The settings file loadConfig(env, {}, options) reads, as an absolute path, and whether it must
 * exist; undefined when it reads none.
 */
function settingsFileFor(
  env: NodeJS.ProcessEnv,
  options: LoadConfigOptions,
): { path: string; required: boolean } | undefined {
  if (options.file !== undefined) return { path: resolve(options.file), required: true };
  const named = env[FILE_VAR];
  if (named !== undefined) return named === '' ? undefined : { path: resolve(named), required: true };
  const fallback = options.defaultFile ?? (env === process.env ? DEFAULT_SETTINGS_FILE : undefined);
  return fallback === undefined ? undefined : { path: resolve(fallback), required: false };
}

/** The settings file `loadConfig(env)` would read (absolute), or undefined for none. */
export function settingsFilePath(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return settingsFileFor(env, {})?.path;
}

function readFile(
  wanted: { path: string; required: boolean },
  problems: Problem[],
): SettingsFile | undefined {
  const place = { file: wanted.path };
  try {
    const file = readSettingsFile(wanted.path);
    if (file === undefined && wanted.required)
      problems.push({
        variables: [FILE_VAR],
        text: `${FILE_VAR}: the settings file ${wanted.path} does not exist`,
        code: 'CONFIG_INVALID',
        place,
      });
    return file;
  } catch (err) {
    problems.push({
      variables: [FILE_VAR],
      text: `${FILE_VAR}: the settings file ${wanted.path} cannot be read (${messageOf(err)})`,
      code: 'CONFIG_INVALID',
      place,
    });
    return undefined;
  }
}

/**
 * The file's settings by variable name, once each line is checked: every line one known setting,
 * none twice, and a file holding a secret readable by its owner only.
 */
function fileSettings(
  file: SettingsFile | undefined,
  problems: Problem[],
): Map<string, SettingsLine & { file: string }> {
  const found = new Map<string, SettingsLine & { file: string }>();
  if (file === undefined) return found;
  const refused: Problem[] = file.malformed.map(({ line, why }) => ({
    variables: [],
    text: `${file.path}:${line}: ${why}`,
    code: 'CONFIG_INVALID',
    place: { file: file.path, line },
  }));
  for (const entry of file.lines) {
    const { name, line } = entry;
    const before = found.get(name);
    const refusal =
      name === FILE_VAR
        ? `${name}: a settings file cannot name another (set ${FILE_VAR} in the environment)`
        : !SETTING_NAMES.has(name)
          ? `${name}: unknown setting (see docs/configuration.md)`
          : before !== undefined
            ? `${name}: set twice, also on line ${before.line}`
            : undefined;
    if (refusal === undefined) found.set(name, { ...entry, file: file.path });
    else
      refused.push({
        variables: [name],
        text: `${file.path}:${line}: ${refusal}`,
        code: 'CONFIG_INVALID',
        place: { file: file.path, line },
      });
  }
  problems.push(...refused.sort((a, b) => (a.place?.line ?? 0) - (b.place?.line ?? 0)));
  const secrets = [...found.values()].filter((e) => holdsSecret(e.name, e.value)).map((e) => e.name);
  if (secrets.length > 0 && (file.mode & 0o077) !== 0) {
    problems.push({
      variables: secrets,
      text: `${file.path} holds ${secrets.join(', ')} and its group or others can read it (mode ${file.mode.toString(8).padStart(4, '0')}): chmod 600 ${file.path}`,
      code: 'CONFIG_INVALID',
      place: { file: file.path },
    });
  }
  return found;
}

/** True when `value` of the setting named `name` is a secret: a secret's value, a URL with credentials. */
function holdsSecret(name: string, value: string): boolean {
  const secret = SETTINGS_BY_NAME.get(name)?.secret;
  if (secret === undefined || value === '') return false;
  if (secret === 'value') return true;
  if (!URL.canParse(value)) return true; // it may still hold a password
  const url = new URL(value);
  return url.username !== '' || url.password !== '' || url.search !== '';
}

/** The value a setting gets, and from where: an override, the environment, the file, the default. */
function pick(
  override: string | number | boolean | undefined,
  fromEnv: string | undefined,
  fromFile: (SettingsLine & { file: string }) | undefined,
  def: string,
): [string, Origin] {
  if (override !== undefined) return [String(override), { kind: 'override' }];
  if (fromEnv !== undefined) return [fromEnv, { kind: 'environment' }];
  if (fromFile !== undefined)
    return [fromFile.value, { kind: 'file', file: fromFile.file, line: fromFile.line }];
  return [def, { kind: 'default' }];
}

/** `text` with the settings-file line it is about in front, when the value came from the file. */
const located = (origin: Origin, text: string): string =>
  origin.kind === 'file' ? `${origin.file}:${origin.line}: ${text}` : text;

const placeOf = (origin: Origin): { place?: SettingsPlace } =>
  origin.kind === 'file' ? { place: { file: origin.file, line: origin.line } } : {};

const SETTINGS_BY_NAME = new Map<string, (typeof SETTINGS)[keyof typeof SETTINGS]>(
  Object.values(SETTINGS).map((s) => [s.env, s]),
);
const SETTING_NAMES = new Set(SETTINGS_BY_NAME.keys());

function configError(problems: Problem[]): ConfigError {
  const variables = [...new Set(problems.flatMap((p) => p.variables))];
  const places = problems.flatMap((p) => (p.place === undefined ? [] : [p.place]));
  const text = problems.map((p) => p.text).join(' | ');
  return problems.every((p) => p.code === 'DEMO_SECRETS_KEY_REFUSED')
    ? new ConfigError('DEMO_SECRETS_KEY_REFUSED', text, variables, places)
    : new ConfigError('CONFIG_INVALID', `invalid configuration: ${text}`, variables, places);
}

/**
 * The demo's published secrets are accepted only with VIGIL_DEMO, which listens on loopback
 * addresses only; without it, the demo's secrets key stops the start. Checked once every setting
 * parsed (`settingsFailed`: some did not, so the values cannot be compared).
 */
function demoProblems(config: Config, settingsFailed: boolean, of: Record<string, Origin>): Problem[] {
  if (settingsFailed) return [];
  if (!config.demo) {
    const origin = of.secretsKey ?? { kind: 'default' };
    return config.secretsKey === PUBLIC_DEMO.secretsKey
      ? [
          {
            variables: [SETTINGS.secretsKey.env],
            text: located(origin, PUBLIC_DEMO_REFUSALS.secretsKey),
            code: 'DEMO_SECRETS_KEY_REFUSED',
            ...placeOf(origin),
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
  'VIGIL_DEMO_CONFIG_FILE',
  'VIGIL_NO_LOCAL_SERVICES',
  'VIGIL_DEMO_SIMULATOR',
  'VIGIL_CHROMIUM_PATH',
  'VIGIL_UPDATE_SCREENSHOTS',
  // The `vigil` command's remote mode (src/cli/profiles.ts): which Vigil to manage, not its settings.
  'VIGIL_URL',
  'VIGIL_TOKEN',
  'VIGIL_PROFILE',
  'VIGIL_PROFILES_FILE',
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
