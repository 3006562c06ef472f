import type { Command } from 'commander';
import type { Locale } from '../../domain/types.ts';
import { leaf, parse, table, type Runtime } from '../runtime.ts';

export function addEnvCommands(program: Command, rt: Runtime): void {
  const env = program.command('env').description('environments (tenants)');

  leaf(env, 'create <env>', 'create an environment')
    .option('--locale <locale>', 'number formatting: en or nl', parse.locale, 'en')
    .action(async (name: string, opts: { locale: Locale; json?: boolean }) => {
      const { admin } = await rt.services();
      const created = await admin.createEnvironment(name, opts.locale);
      rt.print(opts.json, created, `created environment ${name} (locale ${opts.locale})`);
    });

  leaf(env, 'list', 'list environments').action(async (opts: { json?: boolean }) => {
    const { store } = await rt.services();
    const envs = await store.listEnvironments();
    rt.print(
      opts.json,
      envs,
      table(
        ['NAME', 'LOCALE', 'CREATED'],
        envs.map((e) => [e.name, e.locale, e.createdUTC]),
      ),
    );
  });

  leaf(env, 'delete <env>', 'delete an environment with its keys, tokens, users, definitions and devices')
    .option('--force', 'also when it still has devices (their state and events go too)')
    .action(async (name: string, opts: { force?: boolean; json?: boolean }) => {
      const { admin } = await rt.services();
      const r = await admin.deleteEnvironment(name, opts.force === true);
      rt.print(opts.json, { ...r, deleted: true }, `deleted environment ${name} (${r.devices} device(s))`);
    });
}
