/**
 * Trying a definition before it is published, through the API and the CLI: `/definitions/run`
 * runs a stored version or a draft on one payload and answers the workbench's report;
 * `/definitions/replay` runs a draft over the recent payloads of the definition's devices, each
 * payload through the published version too, and answers the diff. Both are scope `write` (they
 * change nothing: no audit entry), run in the trial thread off the API's event loop
 * (trial-runner.ts), and count against the workbench limits per token and per environment.
 */
import { attr, strictAttributes } from '../api/attributes.ts';
import { arrayOf, bool, int, objectOf, str } from '../api/json-schema.ts';
import type { DefinitionSpec, ParserFormat } from '../domain/types.ts';
import { parseDefinitionYaml } from '../domain/definition-spec.ts';
import { AppError, isAppError } from '../errors/app-error.ts';
import { checkSyntax } from '../sandbox/check-syntax.ts';
import type { DefinitionVersionAdmin } from '../tenancy/admin-definition-versions.ts';
import { scopeOf } from '../tenancy/tenancy-store.ts';
import {
  draftCode,
  MAX_REPLAY_PAYLOADS,
  MAX_TRIAL_PAYLOAD_CHARS,
  storedCode,
  type DefinitionTrials,
  type TrialCode,
} from './definition-trials.ts';
import { operation, unchanged, type Caller, type Operation } from './operation.ts';

export interface DefinitionTrialOperationDeps {
  trials: DefinitionTrials;
  definitions: Pick<DefinitionVersionAdmin, 'getDefinition' | 'getVersion'>;
}

/** Longest definition text and parser source accepted, in characters (as /definitions/apply). */
const SOURCE_MAX = 1_000_000;

const source = (what: string) =>
  attr
    .string()
    .max(SOURCE_MAX, { error: `a string of at most ${SOURCE_MAX} characters` })
    .describe(what);
const payloadText = (what: string) =>
  attr
    .string()
    .max(MAX_TRIAL_PAYLOAD_CHARS, { error: `a string of at most ${MAX_TRIAL_PAYLOAD_CHARS} characters` })
    .describe(what);

const POINT_SCHEMA = objectOf({
  sensorName: str,
  sensorType: str,
  parsed: { description: 'What parsePayload returned for it (absent: not returned).' },
  rawValue: { description: 'The converted value, as the read API shows it; null: none.' },
  currentValue: { type: ['string', 'null'], description: 'Formatted in the environment’s locale.' },
  currentStatus: { type: ['string', 'null'] },
  reason: { type: ['string', 'null'] },
  waiting: arrayOf(objectOf({ status: str, reason: str, forMs: int })),
  conversionError: str,
});
const RUN_SCHEMA = objectOf({
  ok: bool,
  dataPoints: arrayOf(POINT_SCHEMA),
  unknownKeys: arrayOf(str),
  code: {
    ...str,
    description:
      'When not ok: PARSER_ERROR, PARSER_TIMEOUT, PARSER_MEMORY, PARSER_BAD_RESULT, PARSER_CODEC_ERRORS, PROCESSING_FAILED, INVALID_INPUT (a codec tried on a payload that is neither a network server’s message nor bytes in hex).',
  },
  message: str,
  filename: { ...str, description: 'The parser’s file name that `message` names.' },
  line: { ...int, description: 'The parser error’s line, when the message names one.' },
  column: int,
  logs: arrayOf(str),
  warnings: { ...arrayOf(str), description: 'A device codec’s warnings (its data is kept); absent when none.' },
});
const OUTCOME_SCHEMA = {
  type: 'object',
  description: 'ok: dataPoints by name ({value, currentValue, status}); else code, message, line, column.',
};
const REPLAY_SCHEMA = objectOf({
  definitionName: str,
  published: { ...int, description: 'The published version the draft is compared with.' },
  devices: int,
  devicesReplayed: int,
  available: { ...int, description: 'Recent payloads read.' },
  replayed: int,
  skipped: { ...int, description: 'Payloads shortened when kept: not run.' },
  counts: objectOf({ fails: int, succeeds: int, status: int, value: int, same: int }),
  rows: arrayOf(
    objectOf({
      verdict: { enum: ['fails', 'succeeds', 'status', 'value', 'same'] },
      deviceName: str,
      ingestId: str,
      receivedUTC: str,
      payload: str,
      raw: str,
      then: OUTCOME_SCHEMA,
      now: OUTCOME_SCHEMA,
      changes: arrayOf(objectOf({ sensorName: str, then: OUTCOME_SCHEMA, now: OUTCOME_SCHEMA })),
    }),
  ),
});

/** A draft's data points and rules, or INVALID_INPUT with where its problem is (as /definitions/apply). */
export function draftSpec(definition: string): DefinitionSpec {
  try {
    return parseDefinitionYaml(definition, 'definition', { parserOptional: true }).spec;
  } catch (err) {
    if (!isAppError(err)) throw err;
    const { line, column } = (err.details ?? {}) as { line?: number; column?: number };
    throw new AppError('INVALID_INPUT', err.message, { details: { part: 'definition', line, column } });
  }
}

/** INVALID_INPUT when a draft parser does not compile, with its line and column. */
export function checkDraftParser(
  parserSource: string,
  filename: string,
  format: ParserFormat = 'parsePayload',
): void {
  const syntax = checkSyntax(parserSource, filename, format);
  if (!syntax.ok)
    throw new AppError('INVALID_INPUT', syntax.message, {
      details: { part: 'parser', line: syntax.line, column: syntax.column },
    });
}

/** The limit's key of an API caller: its token (or the CLI's user in the direct mode). */
const callerKey = (caller: Caller) => ({ env: caller.env, key: `api:${caller.actor}` });

export function definitionTrialOperations(deps: DefinitionTrialOperationDeps): Operation[] {
  const { trials, definitions } = deps;

  /** What a Run runs: the draft's parts where given, the stored version's for the rest. */
  async function codeOf(
    caller: Caller,
    a: {
      definitionName?: string | undefined;
      definitionIsPublic?: boolean | undefined;
      version?: number | undefined;
      definition?: string | undefined;
      parserSource?: string | undefined;
    },
  ): Promise<TrialCode> {
    const isPublic = a.definitionIsPublic ?? false;
    const spec = a.definition === undefined ? undefined : draftSpec(a.definition);
    const name = spec?.name ?? a.definitionName;
    if (name === undefined)
      throw new AppError(
        'MISSING_ATTRIBUTE',
        'The attribute definitionName is required (or definition and parserSource).',
        { details: { attribute: 'definitionName' } },
      );
    checkName(a.definitionName, name);
    if (a.parserSource !== undefined && spec)
      checkDraftParser(a.parserSource, `${name}.js`, spec.parserFormat);
    // A whole draft needs nothing stored (a definition not made yet); a part of one takes the rest
    // from the stored version.
    if (spec && a.parserSource !== undefined && a.version === undefined)
      return draftCode(spec, a.parserSource);
    const scope = scopeOf(caller.env, isPublic);
    const head = await definitions.getDefinition(scope, name);
    const stored = await definitions.getVersion(scope, name, a.version ?? head.version);
    if (!spec && a.parserSource === undefined)
      return storedCode(stored.spec, stored.parserSource, isPublic, stored.version);
    // A parser alone is checked in the stored version's form.
    if (a.parserSource !== undefined && !spec)
      checkDraftParser(a.parserSource, `${name}.js`, stored.spec.parserFormat);
    return draftCode(spec ?? stored.spec, a.parserSource ?? stored.parserSource);
  }

  return [
    operation({
      path: '/definitions/run',
      scope: 'write',
      attributes: strictAttributes({
        definitionName: attr
          .string()
          .optional()
          .describe('A stored definition: its published version, or `version`.'),
        definitionIsPublic: attr
          .boolean()
          .optional()
          .describe('true: the public definition of that name (default false).'),
        version: attr
          .number({ integer: true, min: 1 })
          .optional()
          .describe('A stored version (default the published one).'),
        definition: source(
          'A draft as YAML; with parserSource, the draft is run instead of a stored version.',
        ).optional(),
        parserSource: source(
          'A draft parser; without `definition`, run with the stored version’s data points.',
        ).optional(),
        payload: payloadText('What the parser receives as payloadStr.'),
        payloadRaw: payloadText('What it receives as payloadRaw (default: payload).').optional(),
        deviceName: attr
          .string()
          .optional()
          .describe('A device whose threshold overrides give the statuses.'),
      }),
      answer: {
        summary:
          'Run a stored version or a draft on one payload: each data point converted, formatted, its status, or the parser’s error with its line',
        data: RUN_SCHEMA,
        errors: ['404', '429'],
      },
      async run(caller, a) {
        const code = await codeOf(caller, a);
        const report = await trials.run(callerKey(caller), code, {
          payload: a.payload,
          payloadRaw: a.payloadRaw,
          deviceName: a.deviceName,
        });
        return unchanged(report);
      },
    }),
    operation({
      path: '/definitions/replay',
      scope: 'write',
      attributes: strictAttributes({
        definitionName: attr
          .string()
          .describe('The private definition whose devices’ recent payloads are replayed.'),
        definition: source(
          'The draft as YAML (its `parser` field may be left out); its name must be definitionName.',
        ),
        parserSource: source('The draft parser.'),
        limit: attr
          .number({ integer: true, min: 1, max: MAX_REPLAY_PAYLOADS })
          .optional()
          .describe(
            `Payloads run at most (default and most ${MAX_REPLAY_PAYLOADS}), sampled evenly across devices and time.`,
          ),
      }),
      answer: {
        summary:
          'Replay a draft over the recent payloads of the definition’s devices, each also run through the published version: what would now fail, now succeed, change a status or a value',
        data: REPLAY_SCHEMA,
        errors: ['404', '429'],
      },
      async run(caller, a) {
        const spec = draftSpec(a.definition);
        checkName(a.definitionName, spec.name);
        checkDraftParser(a.parserSource, `${spec.name}.js`, spec.parserFormat);
        const answer = await trials.replay(callerKey(caller), draftCode(spec, a.parserSource), {
          limit: a.limit,
        });
        return unchanged(answer);
      },
    }),
  ];
}

/** INVALID_INPUT when the draft's name is not the definition named. */
function checkName(named: string | undefined, draftName: string): void {
  if (named !== undefined && named !== draftName)
    throw new AppError(
      'INVALID_INPUT',
      `the draft is definition ${draftName}, not ${named}: its YAML's name must be definitionName`,
      { details: { part: 'definition', attribute: 'definition' } },
    );
}
