/**
 * Managing an environment's definitions and their versions: list and read them (the environment's
 * private ones and the public ones), make a version from a definition's YAML and parser source
 * (published at once, or kept as a draft), publish one, roll back to an earlier one, delete one no
 * device uses, and check a draft while it is being written. Public definitions are the server's
 * (`vigil definition apply --public`): they are read here, never changed.
 */
import { attr, strictAttributes } from '../api/attributes.ts';
import { arrayOf, bool, int, objectOf, str } from '../api/json-schema.ts';
import { definitionYaml, parseDefinitionYaml } from '../domain/definition-spec.ts';
import type { DefinitionSpec } from '../domain/types.ts';
import { AppError, isAppError } from '../errors/app-error.ts';
import { checkSyntax } from '../sandbox/check-syntax.ts';
import { VERSION_NOTE_MAX, type DefinitionVersionAdmin } from '../tenancy/admin-definition-versions.ts';
import { scopeOf } from '../tenancy/tenancy-store.ts';
import type { TenancyStore } from '../tenancy/tenancy-store.ts';
import type { DefinitionRecord } from '../tenancy/types.ts';
import { changed, operation, unchanged, type Change, type Operation } from './operation.ts';

export interface DefinitionOperationDeps {
  definitions: Pick<
    DefinitionVersionAdmin,
    | 'applyDefinition'
    | 'publishVersion'
    | 'getDefinition'
    | 'listVersions'
    | 'getVersion'
    | 'deleteDefinition'
  >;
  store: Pick<TenancyStore, 'listDefinitions'>;
}

/** Longest definition text and parser source accepted, in characters. */
const SOURCE_MAX = 1_000_000;

const definitionName = () => attr.string();
const isPublic = () =>
  attr.boolean().describe("true: the public definition of that name; false: the environment's private one.");
const note = () =>
  attr
    .string()
    .max(VERSION_NOTE_MAX, { error: `a string of at most ${VERSION_NOTE_MAX} characters` })
    .optional()
    .describe('Why: kept with the version and in the audit log.');
const revision = () =>
  attr
    .number({ integer: true, min: 0 })
    .optional()
    .describe("The definition's revision the change is based on; 409 CONFLICT when it has another.");
const source = (what: string) =>
  attr
    .string()
    .max(SOURCE_MAX, { error: `a string of at most ${SOURCE_MAX} characters` })
    .describe(what);

const SUMMARY_SCHEMA = objectOf({
  definitionName: str,
  definitionIsPublic: bool,
  manufacturer: str,
  version: { ...int, description: 'The published version.' },
  latest: { ...int, description: 'The newest version (a draft when not the published one).' },
  revision: int,
  dataPoints: arrayOf(str),
  updatedUTC: str,
});
const VERSION_META_SCHEMA = objectOf({
  version: int,
  createdUTC: str,
  createdBy: str,
  note: str,
  published: { ...bool, description: 'This is the version devices use.' },
  publishedUTC: { type: ['string', 'null'] },
  publishedBy: { type: ['string', 'null'] },
});
const DEFINITION_SCHEMA = objectOf({
  definitionName: str,
  definitionIsPublic: bool,
  version: { ...int, description: 'The version shown.' },
  published: int,
  latest: int,
  revision: int,
  definition: { ...str, description: 'The definition as YAML, as a definition file holds it.' },
  spec: { type: 'object' },
  parserSource: str,
  createdUTC: str,
  createdBy: str,
  note: str,
});
const APPLY_SCHEMA = objectOf({
  definitionName: str,
  version: { ...int, description: 'The version of this content (new, or the newest when it was the same).' },
  published: int,
  revision: int,
  created: bool,
  changed: bool,
});
const PROBLEM_SCHEMA = objectOf({
  part: { enum: ['definition', 'parser'] },
  code: str,
  message: str,
  line: { type: ['integer', 'null'] },
  column: { type: ['integer', 'null'] },
});

/** A definition's draft checked: its spec, or the first problem of each part. */
export interface DraftCheck {
  spec: DefinitionSpec | null;
  problems: {
    part: 'definition' | 'parser';
    code: string;
    message: string;
    line: number | null;
    column: number | null;
  }[];
}

/** Checks a draft's YAML and parser source; never throws for what is wrong with them. */
export function checkDraft(definition: string, parserSource: string): DraftCheck {
  const problems: DraftCheck['problems'] = [];
  let spec: DefinitionSpec | null = null;
  try {
    spec = parseDefinitionYaml(definition, 'definition', { parserOptional: true }).spec;
  } catch (err) {
    if (!isAppError(err)) throw err;
    const { line, column } = (err.details ?? {}) as { line?: number; column?: number };
    problems.push({
      part: 'definition',
      code: err.code,
      message: err.message,
      line: line ?? null,
      column: column ?? null,
    });
  }
  const syntax = checkSyntax(parserSource, 'parser.js', spec?.parserFormat);
  if (!syntax.ok)
    problems.push({
      part: 'parser',
      code: 'PARSER_ERROR',
      message: syntax.message,
      line: syntax.line ?? null,
      column: syntax.column ?? null,
    });
  return { spec, problems };
}

/** The draft's spec; INVALID_INPUT with the first problem (its line and column in `details`). */
function specOfDraft(definition: string, parserSource: string): DefinitionSpec {
  const check = checkDraft(definition, parserSource);
  const problem = check.problems[0];
  if (problem || !check.spec)
    throw new AppError('INVALID_INPUT', problem?.message ?? 'the definition is not valid', {
      details: { part: problem?.part, line: problem?.line, column: problem?.column },
    });
  return check.spec;
}

/** A definition as `/definitions/list` answers it. */
export const summaryOf = (d: DefinitionRecord) => ({
  definitionName: d.spec.name,
  definitionIsPublic: d.isPublic,
  manufacturer: d.spec.manufacturer,
  version: d.version,
  latest: d.latest,
  revision: d.revision,
  dataPoints: d.spec.dataPoints.map((p) => p.name),
  updatedUTC: d.updatedUTC,
});

export function definitionOperations(deps: DefinitionOperationDeps): Operation[] {
  const { definitions, store } = deps;
  const privateScope = (env: string) => scopeOf(env, false);

  return [
    operation({
      path: '/definitions/list',
      scope: 'read',
      attributes: strictAttributes({}),
      answer: {
        summary: "The environment's private definitions, then the public ones, each by name",
        data: arrayOf(SUMMARY_SCHEMA),
        errors: [],
      },
      async run(caller) {
        return unchanged((await store.listDefinitions(caller.env)).map(summaryOf));
      },
    }),
    operation({
      path: '/definitions/get',
      scope: 'read',
      attributes: strictAttributes({
        definitionName: definitionName(),
        definitionIsPublic: isPublic(),
        version: attr.number({ integer: true, min: 1 }).optional().describe('Absent: the published version.'),
      }),
      answer: {
        summary: 'One version of a definition: its YAML and parser',
        data: DEFINITION_SCHEMA,
        errors: ['404'],
      },
      async run(caller, a) {
        const scope = scopeOf(caller.env, a.definitionIsPublic);
        const head = await definitions.getDefinition(scope, a.definitionName);
        const v = await definitions.getVersion(scope, a.definitionName, a.version ?? head.version);
        return unchanged({
          definitionName: a.definitionName,
          definitionIsPublic: a.definitionIsPublic,
          version: v.version,
          published: head.version,
          latest: head.latest,
          revision: head.revision,
          definition: definitionYaml(v.spec),
          spec: v.spec,
          parserSource: v.parserSource,
          createdUTC: v.createdUTC,
          createdBy: v.createdBy,
          note: v.note,
        });
      },
    }),
    operation({
      path: '/definitions/versions',
      scope: 'read',
      attributes: strictAttributes({ definitionName: definitionName(), definitionIsPublic: isPublic() }),
      answer: {
        summary: 'Every version of a definition, newest first, with who made and published it',
        data: arrayOf(VERSION_META_SCHEMA),
        errors: ['404'],
      },
      async run(caller, a) {
        const scope = scopeOf(caller.env, a.definitionIsPublic);
        const head = await definitions.getDefinition(scope, a.definitionName);
        const versions = await definitions.listVersions(scope, a.definitionName);
        return unchanged(
          versions.map((v) => ({
            version: v.version,
            createdUTC: v.createdUTC,
            createdBy: v.createdBy,
            note: v.note,
            published: v.version === head.version,
            publishedUTC: v.publishedUTC ?? null,
            publishedBy: v.publishedBy ?? null,
          })),
        );
      },
    }),
    operation({
      path: '/definitions/check',
      scope: 'write',
      attributes: strictAttributes({
        definition: source('The definition as YAML (its `parser` field may be left out).'),
        parserSource: source('The parser: parsePayload(payloadStr, payloadRaw).'),
      }),
      answer: {
        summary: "Check a draft as it is written: each part's first problem with its line and column",
        data: objectOf({ ok: bool, problems: arrayOf(PROBLEM_SCHEMA) }),
        errors: [],
      },
      async run(_caller, a) {
        const { problems } = checkDraft(a.definition, a.parserSource);
        return Promise.resolve(unchanged({ ok: problems.length === 0, problems }));
      },
    }),
    operation({
      path: '/definitions/apply',
      scope: 'admin',
      attributes: strictAttributes({
        definition: source('The definition as YAML (its `parser` field may be left out); its name names it.'),
        parserSource: source('The parser: parsePayload(payloadStr, payloadRaw).'),
        publish: attr.boolean().optional().describe('false: keep the new version as a draft (default true).'),
        note: note(),
        revision: revision(),
      }),
      answer: {
        summary:
          'Make a version of a private definition (created when new) and publish it, or keep it a draft',
        data: APPLY_SCHEMA,
        errors: ['409'],
      },
      async run(caller, a) {
        const spec = specOfDraft(a.definition, a.parserSource);
        const scope = privateScope(caller.env);
        const before = await definitions.getDefinition(scope, spec.name).catch(() => null);
        const r = await definitions.applyDefinition(scope, spec, a.parserSource, {
          author: { actor: caller.actor, ...(a.note === undefined ? {} : { note: a.note }) },
          ...(a.publish === undefined ? {} : { publish: a.publish }),
          ...(a.revision === undefined ? {} : { revision: a.revision }),
        });
        const data = {
          definitionName: r.name,
          version: r.version,
          published: r.published,
          revision: r.revision,
          created: r.created,
          changed: r.changed,
        };
        const changes: Change[] = [];
        if (r.created)
          changes.push({
            action: before ? 'definition.version' : 'definition.create',
            target: r.name,
            after: { version: r.version },
            details: { note: a.note ?? '' },
          });
        if (r.published !== (before?.version ?? 0))
          changes.push({
            action: 'definition.publish',
            target: r.name,
            before: { version: before?.version ?? null },
            after: { version: r.published },
            details: { note: a.note ?? '' },
          });
        return { data, changes };
      },
    }),
    publishOperation(
      '/definitions/publish',
      'definition.publish',
      'Publish a version of a private definition',
    ),
    publishOperation(
      '/definitions/rollback',
      'definition.rollback',
      'Publish an earlier version of a private definition again',
    ),
    operation({
      path: '/definitions/delete',
      scope: 'admin',
      attributes: strictAttributes({ definitionName: definitionName() }),
      answer: {
        summary: 'Delete a private definition with its versions (409 IN_USE while a device uses it)',
        data: objectOf({ definitionName: str, deleted: bool }),
        errors: ['404', '409'],
      },
      async run(caller, a) {
        const deleted = await definitions.deleteDefinition(privateScope(caller.env), a.definitionName);
        return changed(
          { definitionName: a.definitionName, deleted: true },
          {
            action: 'definition.delete',
            target: a.definitionName,
            before: { version: deleted.version, latest: deleted.latest },
          },
        );
      },
    }),
  ];

  function publishOperation(
    path: string,
    action: 'definition.publish' | 'definition.rollback',
    summary: string,
  ) {
    const rollback = action === 'definition.rollback';
    return operation({
      path,
      scope: 'admin',
      attributes: strictAttributes({
        definitionName: definitionName(),
        version: attr.number({ integer: true, min: 1 }),
        note: note(),
        revision: revision(),
      }),
      answer: {
        summary,
        data: objectOf({ definitionName: str, previous: int, published: int, revision: int, changed: bool }),
        errors: ['404', '409'],
      },
      async run(caller, a) {
        const scope = privateScope(caller.env);
        if (rollback) {
          const head = await definitions.getDefinition(scope, a.definitionName);
          if (a.version >= head.version)
            throw new AppError(
              'INVALID_INPUT',
              `version ${a.version} is not earlier than the published version ${head.version}: publish it instead`,
              { details: { attribute: 'version' } },
            );
        }
        const r = await definitions.publishVersion(scope, a.definitionName, a.version, {
          author: { actor: caller.actor, ...(a.note === undefined ? {} : { note: a.note }) },
          ...(a.revision === undefined ? {} : { revision: a.revision }),
        });
        const data = { definitionName: a.definitionName, ...r };
        if (!r.changed) return unchanged(data);
        return changed(data, {
          action,
          target: a.definitionName,
          before: { version: r.previous },
          after: { version: r.published },
          details: { note: a.note ?? '' },
        });
      },
    });
  }
}
