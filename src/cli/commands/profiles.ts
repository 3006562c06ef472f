import { InvalidArgumentError, type Command } from 'commander';
import { profileProblem, profilesPath, readProfiles, writeProfiles } from '../profiles.ts';
import { leaf, table, type Runtime } from '../runtime.ts';

/** `vigil profile`: the remote Vigils this user manages, in the profile file (src/cli/profiles.ts). */
export function addProfileCommands(program: Command, rt: Runtime): void {
  const profile = program
    .command('profile')
    .description(
      'remote Vigils to manage over HTTP: their address and your token, kept in your profile file',
    );

  leaf(profile, 'set <name>', 'add or change a profile')
    .requiredOption('--url <url>', "the Vigil's API address, e.g. https://vigil.example.com")
    .option('--token <token>', 'a bearer token of yours there (vt_…)')
    .option('--token-stdin', 'read the token from the first line of stdin')
    .option('--default', 'use it when no --profile is given')
    .action(
      async (
        name: string,
        opts: { url: string; token?: string; tokenStdin?: boolean; default?: boolean; json?: boolean },
      ) => {
        if ((opts.token === undefined) === (opts.tokenStdin !== true))
          throw new InvalidArgumentError('give exactly one of --token <token> or --token-stdin');
        const token = opts.token ?? (await firstLine());
        const problem = profileProblem(opts.url, token);
        if (problem !== undefined) throw new InvalidArgumentError(problem);
        const path = profilesPath(process.env);
        const file = readProfiles(path);
        file.profiles[name] = { url: opts.url, token };
        if (opts.default || file.default === undefined) file.default = name;
        writeProfiles(path, file);
        rt.print(
          opts.json,
          { name, url: opts.url, default: file.default === name, file: path },
          `profile ${name} → ${opts.url} (${path})`,
        );
      },
    );

  leaf(profile, 'list', 'the profiles (never their tokens)').action((opts: { json?: boolean }) => {
    const path = profilesPath(process.env);
    const file = readProfiles(path);
    const rows = Object.entries(file.profiles).map(([name, p]) => ({
      name,
      url: p.url,
      default: file.default === name,
    }));
    rt.print(
      opts.json,
      rows,
      table(
        ['NAME', 'URL', 'DEFAULT'],
        rows.map((r) => [r.name, r.url, r.default ? 'yes' : '']),
      ),
    );
  });

  leaf(profile, 'remove <name>', 'forget a profile').action((name: string, opts: { json?: boolean }) => {
    const path = profilesPath(process.env);
    const file = readProfiles(path);
    if (!(name in file.profiles)) throw new InvalidArgumentError(`no profile ${name} in ${path}`);
    delete file.profiles[name];
    if (file.default === name) delete file.default;
    writeProfiles(path, file);
    rt.print(opts.json, { name, removed: true }, `removed profile ${name}`);
  });
}

async function firstLine(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').split(/\r?\n/)[0] ?? '';
}
