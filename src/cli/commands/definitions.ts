import { basename } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import type { Locale } from '../../domain/types.ts';
import { AppError } from '../../errors/app-error.ts';
import { createLogger } from '../../log/logger.ts';
import { loadConfig } from '../../config/load-config.ts';
import { describeScope } from '../../tenancy/admin-definitions.ts';
import { loadDefinitionFiles, loadParserFile } from '../../tenancy/definition-files.ts';
import { describeReport, runDefinitionTest } from '../definition-test.ts';
import { leaf, parse, scopeFrom, table, withEnv, type Runtime } from '../runtime.ts';
import { blockLines } from '../terminal-text.ts';

interface ScopeOpts {
  env?: string;
  public?: boolean;
  json?: boolean;
}

const scoped = (cmd: Command) =>
  cmd
    .option('--env <env>', 'a private definition of this environment')
    .option('--public', 'a public definition');

export function addDefinitionCommands(program: Command, rt: Runtime): void {
  const definition = program
    .command('definition')
    .description('device definitions (YAML + JavaScript parser)');

  scoped(
    leaf(definition, 'apply <file.yaml>', 'create or update a definition from its YAML and parser file'),
  ).action(async (file: string, opts: ScopeOpts) => {
    const scope = scopeFrom(opts);
    const { spec, parserSource } = await loadDefinitionFiles(file);
    const { admin } = await rt.services();
    const r = await admin.applyDefinition(scope, spec, parserSource);
    rt.print(
      opts.json,
      { ...r, isPublic: scope.kind === 'public', env: scope.kind === 'public' ? null : scope.env },
      r.changed
        ? `applied definition ${r.name} (${describeScope(scope)}), revision ${r.revision}`
        : `definition ${r.name} (${describeScope(scope)}) unchanged, revision ${r.revision}`,
    );
  });

  leaf(definition, 'list', "list definitions: the environment's private ones and the public ones")
    .option('--env <env>', 'environment (without it: public definitions only)')
    .action(async (opts: { env?: string; json?: boolean }) => {
      const { admin, store } = await rt.services();
      if (opts.env) await admin.requireEnv(opts.env);
      const all = await store.listDefinitions(opts.env ?? '');
      const list = all.filter((d) => opts.env || d.isPublic);
      const rows = list.map((d) => ({
        name: d.spec.name,
        isPublic: d.isPublic,
        manufacturer: d.spec.manufacturer,
        version: d.spec.version,
        revision: d.revision,
        dataPoints: d.spec.dataPoints.map((p) => p.name),
        updatedUTC: d.updatedUTC,
      }));
      rt.print(
        opts.json,
        rows,
        table(
          ['NAME', 'SCOPE', 'VERSION', 'REVISION', 'DATA POINTS'],
          rows.map((r) => [
            r.name,
            r.isPublic ? 'public' : 'private',
            r.version,
            String(r.revision),
            r.dataPoints.join(', '),
          ]),
        ),
      );
    });

  scoped(leaf(definition, 'show <name>', 'show a stored definition'))
    .option('--parser', 'print the parser source too')
    .action(async (name: string, opts: ScopeOpts & { parser?: boolean }) => {
      const scope = scopeFrom(opts);
      const { store, admin } = await rt.services();
      if (scope.kind === 'private') await admin.requireEnv(scope.env);
      const def = await store.getDefinition(
        scope.kind === 'private' ? scope.env : '',
        name,
        scope.kind === 'public',
      );
      if (!def) throw new AppError('DEFINITION_NOT_FOUND', `no definition ${name} (${describeScope(scope)})`);
      const data = { ...def, parserSource: opts.parser ? def.parserSource : undefined };
      rt.print(opts.json, data, [
        `${def.spec.name} (${describeScope(scope)}), revision ${def.revision}, updated ${def.updatedUTC}`,
        ...blockLines(JSON.stringify(def.spec, null, 2)),
        ...(opts.parser ? ['--- parser ---', ...blockLines(def.parserSource)] : []),
      ]);
    });

  scoped(leaf(definition, 'delete <name>', 'delete a definition no device uses')).action(
    async (name: string, opts: ScopeOpts) => {
      const scope = scopeFrom(opts);
      const { admin } = await rt.services();
      await admin.deleteDefinition(scope, name);
      rt.print(opts.json, { name, deleted: true }, `deleted definition ${name} (${describeScope(scope)})`);
    },
  );

  leaf(definition, 'test <file.yaml>', "run the definition's parser on a payload and show each data point")
    .requiredOption('--payload <text>', 'the payload as the gateway would receive it (JSON unless --raw)')
    .option('--raw', 'the payload is raw text (hex, CSV …), not JSON')
    .option('--locale <locale>', 'format values for en or nl', parse.locale, 'en')
    .action(
      async (file: string, opts: { payload: string; raw?: boolean; locale: Locale; json?: boolean }) => {
        if (!opts.raw) {
          try {
            JSON.parse(opts.payload);
          } catch {
            throw new InvalidArgumentError('--payload is not valid JSON (use --raw for other payloads)');
          }
        }
        const { spec, parserSource, parserPath } = await loadDefinitionFiles(file);
        const config = loadConfig();
        const report = runDefinitionTest({
          spec,
          parserSource,
          parserFilename: basename(parserPath),
          payload: opts.payload,
          locale: opts.locale,
          timeoutMs: config.sandboxTimeoutMs,
          memoryLimitMb: config.sandboxMemoryMb,
          log: createLogger('silent'),
        });
        rt.print(opts.json, report, describeReport(report));
        if (!report.ok) process.exitCode = 1;
      },
    );

  addPreparserCommands(program, rt);
}

function addPreparserCommands(program: Command, rt: Runtime) {
  const preparser = program.command('preparser').description("the environment's pre-parser");
  type EnvOpts = { env: string; json?: boolean };

  withEnv(
    leaf(preparser, 'set <file.js>', 'set the pre-parser source (keeps its enabled flag; new: disabled)'),
  )
    .option('--enable', 'enable it as well')
    .action(async (file: string, opts: EnvOpts & { enable?: boolean }) => {
      const source = await loadParserFile(file);
      const { admin } = await rt.services();
      const r = await admin.setPreparser(opts.env, source, opts.enable ? true : undefined);
      rt.print(
        opts.json,
        { env: opts.env, ...r },
        `pre-parser of ${opts.env} ${r.changed ? 'set' : 'unchanged'}: revision ${r.revision}, ${r.enabled ? 'enabled' : 'disabled'}`,
      );
    });

  for (const enabled of [true, false]) {
    const verb = enabled ? 'enable' : 'disable';
    withEnv(leaf(preparser, verb, `${verb} the pre-parser for /gateway/submit and /raw`)).action(
      async (opts: EnvOpts) => {
        const { admin } = await rt.services();
        await admin.setPreparserEnabled(opts.env, enabled);
        rt.print(opts.json, { env: opts.env, enabled }, `pre-parser of ${opts.env} ${verb}d`);
      },
    );
  }

  withEnv(leaf(preparser, 'show', 'show the pre-parser')).action(async (opts: EnvOpts) => {
    const { admin, store } = await rt.services();
    await admin.requireEnv(opts.env);
    const p = await store.getPreparser(opts.env);
    rt.print(
      opts.json,
      p,
      p
        ? [`revision ${p.revision}, ${p.enabled ? 'enabled' : 'disabled'}`, ...blockLines(p.source)]
        : `${opts.env} has no pre-parser`,
    );
  });

  withEnv(leaf(preparser, 'remove', 'remove the pre-parser')).action(async (opts: EnvOpts) => {
    const { admin } = await rt.services();
    await admin.removePreparser(opts.env);
    rt.print(opts.json, { env: opts.env, removed: true }, `pre-parser of ${opts.env} removed`);
  });
}
