/**
 * The settings file: one `VIGIL_NAME=value` line per setting, the form of the environment itself
 * (and of docker compose's `env_file` and systemd's `EnvironmentFile`), each line parsed by Node's
 * `util.parseEnv`. Reading it is for loadConfig alone, which decides what the lines mean; writing
 * one is for scripts that keep settings of their own (`npm run demo`).
 */
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parseEnv } from 'node:util';

/** One `NAME=value` line of a settings file; `line` counts from 1. */
export interface SettingsLine {
  name: string;
  value: string;
  line: number;
}

export interface SettingsFile {
  path: string;
  /** The file's permission bits (`stat` mode & 0o777). */
  mode: number;
  lines: SettingsLine[];
  /** Lines that are neither blank, a comment nor one `NAME=value`, with why. */
  malformed: { line: number; why: string }[];
}

/**
 * Reads the settings file at `path`; undefined when there is none. Other failures to read it
 * (a directory, no permission) are thrown as Node gives them.
 */
export function readSettingsFile(path: string): SettingsFile | undefined {
  let mode: number;
  let text: string;
  try {
    mode = statSync(path).mode & 0o777;
    text = readFileSync(path, 'utf8'); // a directory throws EISDIR
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const lines: SettingsLine[] = [];
  const malformed: SettingsFile['malformed'] = [];
  // Line by line, so that every setting and every refusal has its line number. No setting needs
  // a value of several lines, which parseEnv would otherwise accept between double quotes.
  text.split(/\r?\n/).forEach((source, index) => {
    const line = index + 1;
    const trimmed = source.trim();
    if (trimmed === '' || trimmed.startsWith('#')) return;
    const entries = Object.entries(parseEnv(source));
    const [entry] = entries;
    if (entries.length !== 1 || entry === undefined) {
      malformed.push({ line, why: 'expected one NAME=value' });
      return;
    }
    // parseEnv ends an unquoted value at the first `#` (`abc#123` is `abc`): a password cut short
    // fails much later and far from here, so a `#` that does not start a comment must be quoted.
    const rawValue = source.slice(source.indexOf('=') + 1).trim();
    if (!/^["'`]/.test(rawValue) && /[^\s#]#/.test(rawValue)) {
      malformed.push({ line, why: `quote a value that holds "#" ('…#…'), or put a space before a comment` });
      return;
    }
    lines.push({ name: entry[0], value: entry[1] ?? '', line });
  });
  return { path, mode, lines, malformed };
}

/** A value as a settings-file line holds it: bare when it can be, else in single quotes. */
function quoted(name: string, value: string): string {
  if (/^[A-Za-z0-9_.,:/@+=\-[\]%*]*$/.test(value)) return value;
  if (!/['\n\r]/.test(value)) return `'${value}'`;
  throw new Error(
    `${name}: a value with a single quote or a line break cannot be written to a settings file`,
  );
}

/**
 * Writes `settings` (variable names to values) to `path` with mode 0600, a comment line for each
 * line of `header` first. The file is replaced whole (written beside it, then renamed), so a
 * reader never sees half of it and its mode is 0600 from the start.
 */
export function writeSettingsFile(path: string, header: string[], settings: Record<string, string>): void {
  const text = [
    ...header.map((h) => `# ${h}`.trimEnd()),
    ...Object.entries(settings).map(([name, value]) => `${name}=${quoted(name, value)}`),
    '',
  ].join('\n');
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  writeFileSync(temporary, text, { mode: 0o600 });
  renameSync(temporary, path);
}
