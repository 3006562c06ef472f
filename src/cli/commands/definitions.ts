import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import type { Locale } from '../../domain/types.ts';
import { AppError } from '../../errors/app-error.ts';
import { createLogger } from '../../log/logger.ts';
import { loadConfig } from '../../config/load-config.ts';
import { describeScope } from '../../tenancy/admin-definitions.ts';
import { PREPARSER_FILENAME, type PreparserAnswer } from '../../management/preparser-operations.ts';
import { loadDefinitionFiles } from '../../tenancy/definition-files.ts';
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
  const describe = (env: string, r: PreparserAnswer, verb: string) =>
    `pre-parser of ${env} ${r.changed ? verb : 'unchanged'}: revision ${r.revision}, ${r.enabled ? 'enabled' : 'disabled'}`;

  withEnv(
    leaf(preparser, 'set <file.js>', 'set the pre-parser source (keeps its enabled flag; new: disabled)'),
  )
    .option('--enable', 'enable it as well')
    .option(
      '--revision <n>',
      'the revision the change is based on (refused when the pre-parser has another)',
      parse.positiveInt,
    )
    .action(async (file: string, opts: EnvOpts & { enable?: boolean; revision?: number }) => {
      const source = await readSource(file);
      const r = await namingFile(file, () =>
        rt.manage<PreparserAnswer>(opts.env, '/preparser/set', {
          source,
          enabled: opts.enable ? true : undefined,
          revision: opts.revision,
        }),
      );
      rt.print(opts.json, { env: opts.env, ...r }, describe(opts.env, r, 'set'));
    });

  for (const enabled of [true, false]) {
    const verb = enabled ? 'enable' : 'disable';
    withEnv(leaf(preparser, verb, `${verb} the pre-parser for /gateway/submit and /raw`)).action(
      async (opts: EnvOpts) => {
        const r = await rt.manage<PreparserAnswer>(opts.env, `/preparser/${verb}`, {});
        rt.print(opts.json, { env: opts.env, ...r }, describe(opts.env, r, `${verb}d`));
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
    await rt.manage(opts.env, '/preparser/remove', {});
    rt.print(opts.json, { env: opts.env, removed: true }, `pre-parser of ${opts.env} removed`);
  });
}

/** A parser file's text, sent as it is (the operation checks that it compiles). */
async function readSource(file: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    const reason = (err as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (err as Error).message;
    throw new AppError('INVALID_INPUT', `cannot read parser file ${file}: ${reason}`);
  }
}

/**
 * Runs `send`; a refusal of the source (which the operation names preparser.js, as the worker does)
 * names `file` instead, so the place of a syntax error reads `my-file.js:3:9`.
 */
async function namingFile<T>(file: string, send: () => Promise<T>): Promise<T> {
  try {
    return await send();
  } catch (err) {
    if (!(err instanceof AppError) || err.code !== 'INVALID_INPUT' || err.details?.attribute !== 'source')
      throw err;
    throw new AppError('INVALID_INPUT', err.message.replaceAll(PREPARSER_FILENAME, basename(file)), {
      ...(err.details ? { details: err.details } : {}),
    });
  }
}
