/**
 * The environment's pre-parser: the JavaScript that turns a submission of the pre-parser gateway
 * paths (and of every JSON path while it is enabled) into device payloads. Its source is checked
 * to compile before it is stored; its revision counts changes of the source (enabling or
 * disabling does not change it) and is what workers' sandboxes cache the compiled code by, so a
 * new source runs within the catalog's cache time.
 *
 * Reading it needs scope `write`, not `read`: it is code the environment's operators debug (they
 * run parsers in the workbench, which is scope `write` too), and it may hold what a read-only
 * token — a dashboard's — has no need of, such as a key a device signs its payloads with.
 *
 * The audit log keeps of each version its revision, flag, size in bytes and SHA-256, not the
 * source: it is read to see who changed what and when, and the hash names the version
 * (`sha256sum preparser.js`) without copying into the log, for the log's whole retention, code
 * that may hold such a key.
 */
import { createHash } from 'node:crypto';
import { attr, strictAttributes } from '../api/attributes.ts';
import { bool, int, objectOf, str } from '../api/json-schema.ts';
import { AppError } from '../errors/app-error.ts';
import { checkSyntax } from '../sandbox/check-syntax.ts';
import type { DefinitionAdmin, PreparserWrite } from '../tenancy/admin-definitions.ts';
import type { PreparserRecord } from '../tenancy/types.ts';
import { changed, operation, unchanged, type Operation } from './operation.ts';

/** The name the pre-parser's source goes by in messages: a syntax error's, and the worker's. */
export const PREPARSER_FILENAME = 'preparser.js';

export interface PreparserOperationDeps {
  admin: Pick<DefinitionAdmin, 'findPreparser' | 'setPreparser' | 'setPreparserEnabled' | 'removePreparser'>;
}

/** What the pre-parser operations that change it answer. */
export interface PreparserAnswer {
  enabled: boolean;
  revision: number;
  /** False when it was so already (nothing written, no audit entry). */
  changed: boolean;
}

/** What the audit log keeps of a pre-parser version: not its source (see above). */
export function auditedPreparser(p: PreparserRecord) {
  return {
    revision: p.revision,
    enabled: p.enabled,
    sourceBytes: Buffer.byteLength(p.source, 'utf8'),
    sourceSha256: createHash('sha256').update(p.source, 'utf8').digest('hex'),
  };
}

/** INVALID_INPUT unless `source` compiles and defines parsePayload; the place in `details`. */
function checkSource(source: string): void {
  const check = checkSyntax(source, PREPARSER_FILENAME);
  if (check.ok) return;
  const at = check.line === undefined ? {} : { line: check.line, column: check.column };
  throw new AppError('INVALID_INPUT', check.message, { details: { attribute: 'source', ...at } });
}

const noPreparser = (env: string) =>
  new AppError('PREPARSER_NOT_FOUND', `environment ${env} has no pre-parser`);

const ANSWER_SCHEMA = objectOf({ enabled: bool, revision: int, changed: bool });

const answerOf = (w: PreparserWrite): PreparserAnswer => ({
  enabled: w.after.enabled,
  revision: w.after.revision,
  changed: w.changed,
});

export function preparserOperations(deps: PreparserOperationDeps): Operation[] {
  const { admin } = deps;

  const switchOperation = (enabled: boolean) => {
    const verb = enabled ? 'enable' : 'disable';
    return operation({
      path: `/preparser/${verb}`,
      scope: 'admin',
      attributes: strictAttributes({}),
      answer: {
        summary: `${enabled ? 'Enable' : 'Disable'} the pre-parser for the JSON gateway paths`,
        data: ANSWER_SCHEMA,
        errors: ['404'],
      },
      async run(caller) {
        const w = await admin.setPreparserEnabled(caller.env, enabled);
        if (!w.changed) return unchanged(answerOf(w));
        return changed(answerOf(w), {
          action: `preparser.${verb}`,
          target: 'preparser',
          ...(w.before ? { before: auditedPreparser(w.before) } : {}),
          after: auditedPreparser(w.after),
        });
      },
    });
  };

  return [
    operation({
      path: '/preparser/get',
      scope: 'write',
      attributes: strictAttributes({}),
      answer: {
        summary: 'The pre-parser: its source, whether it is enabled, its revision',
        data: objectOf({ source: str, enabled: bool, revision: int }),
        errors: ['404'],
      },
      async run(caller) {
        const p = await admin.findPreparser(caller.env);
        if (!p) throw noPreparser(caller.env);
        return unchanged({ source: p.source, enabled: p.enabled, revision: p.revision });
      },
    }),
    operation({
      path: '/preparser/set',
      scope: 'admin',
      attributes: strictAttributes({
        source: attr
          .string()
          .describe(
            'The JavaScript, defining parsePayload(payloadStr, payloadRaw); it must compile (400 INVALID_INPUT with line and column).',
          ),
        enabled: attr.boolean().optional().describe('Absent: as it is (a new pre-parser: disabled).'),
        revision: attr
          .number({ integer: true, min: 0 })
          .optional()
          .describe(
            'The revision the change is based on (0: that there is no pre-parser); 409 CONFLICT when it has another. Absent: last writer wins.',
          ),
      }),
      answer: {
        summary: 'Set the pre-parser’s source (and whether it is enabled)',
        data: ANSWER_SCHEMA,
        errors: ['409'],
      },
      async run(caller, { source, enabled, revision }) {
        checkSource(source);
        const w = await admin.setPreparser(caller.env, source, enabled, revision);
        if (!w.changed) return unchanged(answerOf(w));
        return changed(answerOf(w), {
          action: 'preparser.set',
          target: 'preparser',
          ...(w.before ? { before: auditedPreparser(w.before) } : {}),
          after: auditedPreparser(w.after),
        });
      },
    }),
    switchOperation(true),
    switchOperation(false),
    operation({
      path: '/preparser/remove',
      scope: 'admin',
      attributes: strictAttributes({}),
      answer: {
        summary: 'Remove the pre-parser (the pre-parser gateway paths then answer 409 NO_PREPARSER)',
        data: objectOf({ removed: bool, revision: int }),
        errors: ['404'],
      },
      async run(caller) {
        const removed = await admin.removePreparser(caller.env);
        return changed(
          { removed: true, revision: removed.revision },
          { action: 'preparser.remove', target: 'preparser', before: auditedPreparser(removed) },
        );
      },
    }),
  ];
}
