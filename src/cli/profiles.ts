/**
 * Where the `vigil` command finds a remote Vigil: `--url` and `--token`, else VIGIL_URL and
 * VIGIL_TOKEN, else a profile of the profile file (`--profile`, VIGIL_PROFILE, else the file's
 * default). The file — `$XDG_CONFIG_HOME/vigil/profiles.yaml` (`~/.config/vigil/profiles.yaml`),
 * or VIGIL_PROFILES_FILE — holds tokens, so one that others can read is refused. Without any of
 * these the command works directly on Redis, with Vigil's settings (the bootstrap mode).
 */
import { chmodSync, existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { parse, stringify } from 'yaml';
import { z } from 'zod';
import { AppError } from '../errors/app-error.ts';
import { TOKEN_FORMAT } from '../tenancy/admin-credentials.ts';
import type { RemoteTarget } from './remote.ts';

/** The command line's choice, as parsed. */
export interface TargetOptions {
  url?: string;
  token?: string;
  profile?: string;
}

const profileSchema = z.strictObject({
  url: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }),
  token: z.string().regex(TOKEN_FORMAT, { error: 'must be a vt_… token' }),
});
const fileSchema = z.strictObject({
  default: z.string().optional(),
  profiles: z.record(z.string(), profileSchema).default({}),
});
export type ProfilesFile = z.infer<typeof fileSchema>;

export function profilesPath(env: NodeJS.ProcessEnv): string {
  if (env.VIGIL_PROFILES_FILE) return env.VIGIL_PROFILES_FILE;
  const base = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  return join(base, 'vigil', 'profiles.yaml');
}

/** The profile file's content; empty when there is none. INVALID_INPUT when it is readable by others or malformed. */
export function readProfiles(path: string): ProfilesFile {
  if (!existsSync(path)) return { profiles: {} };
  if ((statSync(path).mode & 0o077) !== 0)
    throw new AppError('INVALID_INPUT', `${path} holds tokens and others can read it: chmod 600 ${path}`);
  const parsed = fileSchema.safeParse(parse(readFileSync(path, 'utf8')) ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AppError(
      'INVALID_INPUT',
      `${path}: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data;
}

/** Writes the profile file, readable by its owner only. */
export function writeProfiles(path: string, file: ProfilesFile): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, stringify(file), { mode: 0o600 });
  chmodSync(path, 0o600);
}

/** The reason `url` and `token` make no profile, or undefined when they make one. */
export function profileProblem(url: string, token: string): string | undefined {
  const checked = profileSchema.safeParse({ url, token });
  return checked.success
    ? undefined
    : checked.error.issues.map((i) => `${String(i.path[0])} ${i.message}`).join('; ');
}

/** The remote Vigil the command should use, or null for the direct mode. */
export function resolveTarget(opts: TargetOptions, env: NodeJS.ProcessEnv): RemoteTarget | null {
  const url = opts.url ?? env.VIGIL_URL;
  const token = opts.token ?? env.VIGIL_TOKEN;
  if (url !== undefined || token !== undefined) {
    if (url === undefined || token === undefined)
      throw new AppError(
        'INVALID_INPUT',
        `give both a URL and a token (--url and --token, or VIGIL_URL and VIGIL_TOKEN): ${url === undefined ? 'the URL' : 'the token'} is missing`,
      );
    const source = opts.url !== undefined ? '--url' : 'VIGIL_URL';
    const checked = profileSchema.safeParse({ url, token });
    if (!checked.success)
      throw new AppError(
        'INVALID_INPUT',
        `${source}: ${checked.error.issues.map((i) => `${String(i.path[0])} ${i.message}`).join('; ')}`,
      );
    return { ...checked.data, source };
  }
  const path = profilesPath(env);
  const file = readProfiles(path);
  const name = opts.profile ?? env.VIGIL_PROFILE ?? file.default;
  if (name === undefined) return null;
  const profile = file.profiles[name];
  if (!profile) throw new AppError('INVALID_INPUT', `no profile ${JSON.stringify(name)} in ${path}`);
  return { ...profile, source: `profile ${name}` };
}
