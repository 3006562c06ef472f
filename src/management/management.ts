/**
 * The management operations of an environment and the one way they run: the caller's scope
 * checked, the attributes validated by the operation's schema, the operation run, and each change
 * it reports recorded in the audit log. The API routes (src/api/management-routes.ts), the console's
 * forms and the `vigil` command in its direct mode all go through `run`, so a rule exists once.
 */
import { parseAttributes } from '../api/attributes.ts';
import { maskSecrets, type AuditLog } from '../audit/audit-log.ts';
import type { Logger } from '../log/logger.ts';
import { AppError } from '../errors/app-error.ts';
import type { Caller, Operation, Outcome, RawBody } from './operation.ts';

export interface Management {
  /** Every operation, by path. */
  readonly operations: ReadonlyMap<string, Operation>;
  /**
   * Runs the operation at `path` for `caller` on `input` (attributes, not yet validated):
   * NOT_FOUND for an unknown path, FORBIDDEN when the caller lacks its scope, MISSING_ATTRIBUTE /
   * INVALID_ATTRIBUTE for bad input; the operation's own errors otherwise. Resolves to the answer's
   * `data` once its changes are in the audit log.
   */
  run(path: string, caller: Caller, input: Record<string, unknown>, body?: RawBody): Promise<unknown>;
  /** As `run`, for an operation found already and attributes validated already (the API routes). */
  runValidated(op: Operation, caller: Caller, attrs: unknown, body?: RawBody): Promise<unknown>;
}

export function createManagement(deps: {
  operations: readonly Operation[];
  audit: AuditLog;
  /** Where an audit entry that could not be written is logged (the change itself was made). */
  log?: Logger;
  /**
   * Raises the environment's catalog epoch (TenancyKeys.catalogEpochs) after a change, before it
   * is answered: workers see the change from their next step on (src/tenancy/catalog.ts).
   */
  catalogChanged?: (env: string) => Promise<void>;
}): Management {
  const operations = new Map<string, Operation>();
  for (const op of deps.operations) {
    if (operations.has(op.path)) throw new Error(`two management operations at ${op.path}`);
    operations.set(op.path, op);
  }

  async function runValidated(op: Operation, caller: Caller, attrs: unknown, body?: RawBody) {
    requireScope(op, caller);
    const outcome: Outcome = await op.run(caller, attrs, body);
    if (outcome.changes.length > 0) await deps.catalogChanged?.(caller.env);
    const atUTC = new Date(caller.nowMs).toISOString();
    for (const change of outcome.changes) {
      const entry = {
        atUTC,
        actor: caller.actor,
        action: change.action,
        target: change.target,
        ...(change.before === undefined ? {} : { before: maskSecrets(change.before) }),
        ...(change.after === undefined ? {} : { after: maskSecrets(change.after) }),
        details: change.details ?? {},
      };
      try {
        await deps.audit.record(caller.env, entry);
      } catch (err) {
        deps.log?.error(
          { err, env: caller.env, entry },
          'management: a change was made but its audit entry not written',
        );
        throw err;
      }
    }
    return outcome.data;
  }

  return {
    operations,
    runValidated,
    async run(path, caller, input, body) {
      const op = operations.get(path);
      if (!op) throw new AppError('NOT_FOUND', `There is no management operation ${path}.`);
      requireScope(op, caller);
      return runValidated(op, caller, parseAttributes(op.attributes, input), body);
    },
  };
}

/** FORBIDDEN unless the caller has the operation's scope. */
function requireScope(op: Operation, caller: Caller): void {
  if (caller.scopes.includes(op.scope)) return;
  throw new AppError(
    'FORBIDDEN',
    `${op.path} needs scope ${op.scope}; the caller has ${caller.scopes.join(',') || 'none'}.`,
  );
}
