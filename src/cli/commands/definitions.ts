import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { definitionYaml } from '../../domain/definition-spec.ts';
import { summaryOf } from '../../management/definition-operations.ts';
import type { DefinitionSpec, Locale } from '../../domain/types.ts';
import { cliActor } from '../../audit/audit-log.ts';
import { AppError, isAppError } from '../../errors/app-error.ts';
import { createLogger } from '../../log/logger.ts';
import { loadConfig } from '../../config/load-config.ts';
import { describeScope } from '../../tenancy/admin-definition-versions.ts';
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

interface Applied {
  definitionName: string;
  version: number;
  published: number;
  revision: number;
  created: boolean;
  changed: boolean;
}
interface Summary {
  definitionName: string;
  definitionIsPublic: boolean;
  version: number;
  latest: number;
  dataPoints: string[];
}
interface Shown {
  version: number;
  published: number;
  latest: number;
  definition: string;
  parserSource: string;
  createdUTC: string;
  createdBy: string;
  note: string;
}
interface VersionRow {
  version: number;
  published: boolean;
  createdUTC: string;
  createdBy: string;
  note: string;
}

/** What /definitions/replay answers, as the CLI shows it. */
interface PointOutcome {
  value: unknown;
  currentValue: string | null;
  status: string | null;
}
type TrialOutcome =
  { ok: true; dataPoints: Record<string, PointOutcome> } | { ok: false; code: string; message: string };
interface ReplayDiff {
  definitionName: string;
  published: number;
  devices: number;
  devicesReplayed: number;
  replayed: number;
  skipped: number;
  counts: Record<'fails' | 'succeeds' | 'status' | 'value' | 'same', number>;
  rows: {
    verdict: 'fails' | 'succeeds' | 'status' | 'value' | 'same';
    deviceName: string;
    receivedUTC: string;
    then: TrialOutcome;
    now: TrialOutcome;
    changes: { sensorName: string; then: PointOutcome | null; now: PointOutcome | null }[];
  }[];
}

const VERDICT_TEXT = {
  fails: 'would now fail',
  succeeds: 'would now succeed',
  status: 'status changes',
  value: 'value changes',
  same: 'the same',
} as const;

/** A data point's outcome in a line: `21.4 °C WARNING`, `none`. */
const pointText = (p: PointOutcome | null) =>
  p ? `${p.currentValue ?? JSON.stringify(p.value)}${p.status ? ` ${p.status}` : ''}` : 'none';

/** The dry run's lines: what was replayed, the count of each class, then each payload that differs. */
function describeReplay(d: ReplayDiff, env: string): string[] {
  const head = `dry run of ${d.definitionName} (environment ${env}), nothing written: ${d.replayed} recent payload(s) of ${d.devicesReplayed} of ${d.devices} device(s) replayed beside published version ${d.published}${d.skipped > 0 ? `; ${d.skipped} shortened when kept, not replayed` : ''}`;
  const counts = (Object.keys(VERDICT_TEXT) as (keyof typeof VERDICT_TEXT)[]).map(
    (v) => `  ${VERDICT_TEXT[v].padEnd(18)} ${d.counts[v]}`,
  );
  const differing = d.rows.filter((r) => r.verdict !== 'same');
  const rows = table(
    ['VERDICT', 'DEVICE', 'RECEIVED', 'WHAT CHANGES'],
    differing.map((r) => [
      r.verdict,
      r.deviceName,
      r.receivedUTC,
      !r.now.ok
        ? `${r.now.code} ${r.now.message}`
        : !r.then.ok
          ? `was ${r.then.code}; now ${Object.entries(r.now.dataPoints)
              .map(([name, p]) => `${name} ${pointText(p)}`)
              .join(', ')}`
          : r.changes.map((c) => `${c.sensorName}: ${pointText(c.then)} → ${pointText(c.now)}`).join('; '),
    ]),
  );
  return [head, ...counts, ...(rows.length > 0 ? ['', ...rows] : [])];
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
    leaf(
      definition,
      'apply <file.yaml>',
      'make a version of a definition from its YAML and parser file, and publish it',
    ),
  )
    .option('--draft', 'keep the new version as a draft: devices go on with the published one')
    .option('--note <text>', 'why: kept with the version and in the audit log')
    .option(
      '--dry-run',
      "write nothing: replay the file over the recent payloads of the definition's devices beside the published version, and show what would change",
    )
    .option(
      '--limit <n>',
      'with --dry-run: payloads replayed at most (default and most 2000)',
      parse.positiveInt,
    )
    .action(
      async (
        file: string,
        opts: ScopeOpts & { draft?: boolean; note?: string; dryRun?: boolean; limit?: number },
      ) => {
        const scope = scopeFrom(opts);
        const { spec, parserSource } = await loadDefinitionFiles(file);
        if (opts.dryRun) {
          if (scope.kind === 'public')
            throw new InvalidArgumentError('--dry-run replays the payloads of an environment: give --env');
          const diff = await rt.manage<ReplayDiff>(scope.env, '/definitions/replay', {
            definitionName: spec.name,
            definition: definitionYaml(spec),
            parserSource,
            limit: opts.limit,
          });
          rt.print(opts.json, diff, describeReplay(diff, scope.env));
          return;
        }
        // Public definitions are the server's: changed here directly, never through an environment.
        const r =
          scope.kind === 'public'
            ? await applyPublic(spec, parserSource, opts)
            : await rt.manage<Applied>(scope.env, '/definitions/apply', {
                definition: definitionYaml(spec),
                parserSource,
                publish: opts.draft !== true,
                note: opts.note,
              });
        const where = `${r.definitionName} (${describeScope(scope)})`;
        rt.print(
          opts.json,
          { ...r, isPublic: scope.kind === 'public', env: scope.kind === 'public' ? null : scope.env },
          !r.created
            ? `definition ${where} unchanged: version ${r.version}${r.changed ? ' published' : ''}, published ${r.published}`
            : `made version ${r.version} of definition ${where}; published: ${r.published}${r.published === r.version ? '' : ' (kept as a draft)'}`,
        );
      },
    );

  async function applyPublic(
    spec: DefinitionSpec,
    parserSource: string,
    opts: { draft?: boolean; note?: string },
  ): Promise<Applied> {
    const { admin } = await rt.services();
    const r = await admin.applyDefinition({ kind: 'public' }, spec, parserSource, {
      author: { actor: cliActor(), ...(opts.note === undefined ? {} : { note: opts.note }) },
      publish: opts.draft !== true,
    });
    return { ...r, definitionName: r.name };
  }

  leaf(definition, 'list', "list definitions: the environment's private ones and the public ones")
    .option('--env <env>', 'environment (without it: public definitions only)')
    .action(async (opts: { env?: string; json?: boolean }) => {
      const rows = opts.env
        ? await rt.manage<Summary[]>(opts.env, '/definitions/list', {})
        : // The public definitions alone are the server's: read there directly.
          (await (await rt.services()).store.listDefinitions('')).filter((d) => d.isPublic).map(summaryOf);
      rt.print(
        opts.json,
        rows,
        table(
          ['NAME', 'SCOPE', 'PUBLISHED', 'LATEST', 'DATA POINTS'],
          rows.map((r) => [
            r.definitionName,
            r.definitionIsPublic ? 'public' : 'private',
            String(r.version),
            String(r.latest),
            r.dataPoints.join(', '),
          ]),
        ),
      );
    });

  scoped(leaf(definition, 'show <name>', 'show a definition: its published version, or --version N'))
    .option('--version <n>', 'the version to show', parse.positiveInt)
    .option('--parser', 'print the parser source too')
    .action(async (name: string, opts: ScopeOpts & { parser?: boolean; version?: number }) => {
      const scope = scopeFrom(opts);
      const def = await rt.manage<Shown>(scope.kind === 'private' ? scope.env : '', '/definitions/get', {
        definitionName: name,
        definitionIsPublic: scope.kind === 'public',
        version: opts.version,
      });
      const data = { ...def, parserSource: opts.parser ? def.parserSource : undefined };
      rt.print(opts.json, data, [
        `${name} (${describeScope(scope)}), version ${def.version} of ${def.latest}, published ${def.published}; made ${def.createdUTC} by ${def.createdBy}${def.note ? `: ${def.note}` : ''}`,
        ...blockLines(def.definition),
        ...(opts.parser ? ['--- parser ---', ...blockLines(def.parserSource)] : []),
      ]);
    });

  scoped(leaf(definition, 'versions <name>', "a definition's versions, newest first")).action(
    async (name: string, opts: ScopeOpts) => {
      const scope = scopeFrom(opts);
      const list = await rt.manage<VersionRow[]>(
        scope.kind === 'private' ? scope.env : '',
        '/definitions/versions',
        {
          definitionName: name,
          definitionIsPublic: scope.kind === 'public',
        },
      );
      rt.print(
        opts.json,
        list,
        table(
          ['VERSION', 'PUBLISHED', 'MADE', 'BY', 'NOTE'],
          list.map((v) => [String(v.version), v.published ? 'yes' : '', v.createdUTC, v.createdBy, v.note]),
        ),
      );
    },
  );

  for (const verb of ['publish', 'rollback'] as const) {
    withEnv(
      leaf(
        definition,
        `${verb} <name>`,
        verb === 'publish' ? 'publish a version of a private definition' : 'publish an earlier version again',
      ),
    )
      .requiredOption('--version <n>', 'the version', parse.positiveInt)
      .option('--note <text>', 'why: kept in the audit log')
      .action(async (name: string, opts: { env: string; version: number; note?: string; json?: boolean }) => {
        const r = await rt.manage<{ previous: number; published: number; changed: boolean }>(
          opts.env,
          `/definitions/${verb}`,
          { definitionName: name, version: opts.version, note: opts.note },
        );
        rt.print(
          opts.json,
          r,
          r.changed
            ? `published version ${r.published} of ${name} (was ${r.previous})`
            : `version ${r.published} of ${name} is published already`,
        );
      });
  }

  scoped(leaf(definition, 'delete <name>', 'delete a definition no device uses, with its versions')).action(
    async (name: string, opts: ScopeOpts) => {
      const scope = scopeFrom(opts);
      if (scope.kind === 'public') await (await rt.services()).admin.deleteDefinition(scope, name);
      else await rt.manage(scope.env, '/definitions/delete', { definitionName: name });
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
    const p = await rt
      .manage<{ source: string; enabled: boolean; revision: number }>(opts.env, '/preparser/get', {})
      .catch((err: unknown) => {
        if (isAppError(err) && err.code === 'PREPARSER_NOT_FOUND') return null;
        throw err;
      });
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
