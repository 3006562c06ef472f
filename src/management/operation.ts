/**
 * A management operation: one thing an administrator can do within an environment (create a
 * device, publish a definition, revoke a token…), declared once and served three ways — as
 * `POST /<resource>/<verb>` on the API port, by the web console's forms, and by the `vigil` command
 * (over HTTP, or in this process in its direct mode). Each declares what it needs of the caller
 * (a scope), its attributes (validated before it runs, and published in the OpenAPI document), what
 * it answers, and returns the changes it made, which the caller of `run` records in the audit log.
 */
import type { AuditAction } from '../audit/audit-log.ts';
import type { RouteAnswer } from '../api/api-route.ts';
import type { AttributesSchema } from '../api/attributes.ts';
import type { Scope } from '../tenancy/types.ts';

/** Who calls, from where. */
export interface Caller {
  /** The environment acted on. */
  env: string;
  /** For the audit log: a username, `token:<name>`, `cli:<OS user>`. */
  actor: string;
  /** What the caller may do (a token's scopes, a user's role's). */
  scopes: readonly Scope[];
  nowMs: number;
}

/** One change, as the audit log records it. */
export interface Change {
  action: AuditAction;
  target: string;
  /** The record before (absent for a creation); secrets are masked when it is recorded. */
  before?: unknown;
  /** The record after (absent for a deletion). */
  after?: unknown;
  details?: Record<string, unknown>;
}

/** What an operation did: the answer's `data`, and its changes (none when nothing changed). */
export interface Outcome<D = unknown> {
  data: D;
  changes: Change[];
}

/** A request body that is not attributes (an import's CSV): its text and Content-Type. */
export interface RawBody {
  text: string;
  contentType: string | undefined;
}

/** What the OpenAPI document says of an operation besides its attributes (the read API's form). */
export type OperationAnswer = RouteAnswer;

export interface Operation<A = unknown, D = unknown> {
  /** `/<resource>/<verb>`. */
  path: string;
  /** What the caller must be allowed: `admin` for every change, `read` for what only lists. */
  scope: Scope;
  attributes: AttributesSchema<A>;
  answer: OperationAnswer;
  /**
   * Set for an operation whose body is data rather than attributes (an import): the body is read as
   * text up to `limit` (an express size, '64mb') and handed to `run`; attributes then come from the
   * query string only.
   */
  rawBody?: { limit: string };
  run(caller: Caller, attrs: A, body?: RawBody): Promise<Outcome<D>>;
}

/** An operation whose `run` is typed by its attributes schema. */
export const operation = <A, D>(op: Operation<A, D>): Operation => op;

/** An outcome without changes. */
export const unchanged = <D>(data: D): Outcome<D> => ({ data, changes: [] });

/** An outcome with one change. */
export const changed = <D>(data: D, change: Change): Outcome<D> => ({ data, changes: [change] });
