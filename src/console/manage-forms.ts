/**
 * What every console form that changes something shares: the request must come from the console's
 * own origin, with a session, its anti-forgery token and a role that may (admin for management);
 * the change is a management operation run as the session's user (`ctx.deps.management`, the API's
 * own code: its rules and its audit entry are the API's). A refusal of the operation (a 4xx
 * AppError: a name taken, a stale revision, the last admin) shows the form again with the error's
 * code and message and what the user typed; a success redirects (303) to a page that shows a
 * flash message once. Management pages that only read are admin-only too (`adminPage`).
 */
import express, {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
  type Router,
} from 'express';
import { AppError, isAppError } from '../errors/app-error.ts';
import type { Management } from '../management/management.ts';
import type { Caller, RawBody } from '../management/operation.ts';
import { ROLE_SCOPES, roleAllows } from '../tenancy/types.ts';
import type { ConsoleContext } from './console-context.ts';
import type { Html } from './html.ts';
import { assertSameOrigin, assertToken } from './security.ts';
import type { ConsoleSession } from './sessions.ts';
import type { Flash, NavKey } from './views/layout.ts';

/** A form's fields as posted: text, or several texts for a repeated name. */
export type FormFields = Readonly<Record<string, string | string[] | undefined>>;

/** The caller a session's forms run operations as. */
export function callerOf(session: ConsoleSession, nowMs: number): Caller {
  return { env: session.env, actor: session.username, scopes: ROLE_SCOPES[session.role], nowMs };
}

/** The management operations, or NOT_FOUND where this process has none (a console without them). */
export function managementOf(ctx: ConsoleContext): Management {
  const m = ctx.deps.management;
  if (!m) throw new AppError('NOT_FOUND', 'This console does not manage the environment.');
  return m;
}

/** Runs a management operation as the session's user. */
export function runAs<T>(
  ctx: ConsoleContext,
  session: ConsoleSession,
  path: string,
  input: Record<string, unknown>,
  body?: RawBody,
): Promise<T> {
  return managementOf(ctx).run(path, callerOf(session, ctx.clock()), input, body) as Promise<T>;
}

/** FORBIDDEN unless the session's role manages the environment. */
export function requireAdmin(session: ConsoleSession): void {
  if (!roleAllows(session.role, 'admin'))
    throw new AppError(
      'FORBIDDEN',
      `Managing the environment needs the admin role; you are ${session.role}.`,
    );
}

/** What a form's handler gets. */
export interface FormRequest {
  req: Request;
  res: Response;
  session: ConsoleSession;
  fields: FormFields;
  /** A field's text, trimmed unless `raw`; '' when absent (the first when repeated). */
  text(name: string, o?: { raw?: boolean }): string;
  /** Every value of a field (a repeated name, checkboxes). */
  all(name: string): string[];
  /** Runs a management operation as the session's user. */
  run<T = unknown>(path: string, input: Record<string, unknown>, body?: RawBody): Promise<T>;
  /** Sends a page (the form again, or what is shown once: a new key). */
  show(status: number, title: string, body: Html, active?: NavKey): void;
}

/** Where a form goes on success, and what the page there says once. */
export interface FormSuccess {
  redirect: string;
  /** Text: a success; or a message of either kind (a test notification the receiver refused). */
  flash: string | Flash;
}

export interface ConsoleForm {
  /** Runs the form's operations; a redirect with a flash, or `shown` when it sent a page itself. */
  submit(f: FormRequest): Promise<FormSuccess | 'shown'>;
  /** Sends the form again after a refusal: `error` shown with its code, the user's input kept. */
  again(f: FormRequest, error: AppError): Promise<void> | void;
}

/** Whether an error is a refusal the form is shown again for (not a failure of Vigil, not signed out). */
export const isRefusal = (err: unknown): err is AppError =>
  isAppError(err) &&
  err.status >= 400 &&
  err.status < 500 &&
  err.status !== 401 &&
  err.code !== 'CSRF_REJECTED';

/**
 * Serves a form that changes something at `path` (POST): origin, session, token and role checked
 * before anything is read of it; then `form.submit`, and on a refusal `form.again`.
 */
export function postForm(
  router: Router,
  ctx: ConsoleContext,
  path: string,
  form: ConsoleForm,
  o: { role?: 'admin' } = { role: 'admin' },
): void {
  router.post(path, async (req, res) => {
    const f = await formRequest(ctx, req, res, o.role === 'admin');
    if (!f) return;
    let outcome: FormSuccess | 'shown';
    try {
      outcome = await form.submit(f);
    } catch (err) {
      if (!isRefusal(err)) throw err;
      await form.again(f, err);
      return;
    }
    // Pages of the environment render again at once, the change in them.
    ctx.live.changed(f.session.env);
    if (outcome === 'shown') return;
    setFlash(ctx, req, res, outcome.flash);
    res.redirect(303, outcome.redirect);
  });
}

/** The checked request of a form, or null when it was sent to sign in. */
export async function formRequest(
  ctx: ConsoleContext,
  req: Request,
  res: Response,
  admin: boolean,
): Promise<FormRequest | null> {
  assertSameOrigin(req, ctx.deps.config.publicUrl);
  const session = await ctx.requireSession(req, res);
  if (!session) return null;
  assertToken(req, session.csrf);
  if (admin) requireAdmin(session);
  const fields = (req.body ?? {}) as FormFields;
  const first = (name: string): string => {
    const v = fields[name];
    return typeof v === 'string' ? v : Array.isArray(v) ? (v[0] ?? '') : '';
  };
  return {
    req,
    res,
    session,
    fields,
    text: (name, opts) => (opts?.raw ? first(name) : first(name).trim()),
    all: (name) => {
      const v = fields[name];
      return typeof v === 'string' ? [v] : Array.isArray(v) ? v : [];
    },
    run: (path, input, body) => runAs(ctx, session, path, input, body),
    show: (status, title, body, active = 'manage') =>
      ctx.render(res, status, { title, session, active, body }),
  };
}

/** Serves an admin page at `path` (GET): the session (or sign-in), the admin role, then `render`. */
export function adminPage(
  router: Router,
  ctx: ConsoleContext,
  path: string,
  render: (req: Request, res: Response, session: ConsoleSession) => Promise<void> | void,
): void {
  router.get(path, async (req, res) => {
    const session = await ctx.requireSession(req, res);
    if (!session) return;
    requireAdmin(session);
    managementOf(ctx);
    await render(req, res, session);
  });
}

// Flash messages: a short-lived cookie the next page shows once and clears. Its text is the
// console's own (with names escaped when shown), never a secret.

const FLASH_MAX_CHARS = 1000;
const FLASH_SECONDS = 60;

/** Sets the message the next page shows once. */
export function setFlash(ctx: ConsoleContext, req: Request, res: Response, flash: string | Flash): void {
  const { kind, text } = typeof flash === 'string' ? { kind: 'ok' as const, text: flash } : flash;
  const value = Buffer.from(JSON.stringify({ k: kind, t: text.slice(0, FLASH_MAX_CHARS) })).toString(
    'base64url',
  );
  ctx.cookies.set(req, res, ctx.cookies.flashName(req), value, FLASH_SECONDS);
}

/** The flash message of the request, cleared; undefined when there is none (or it is not one). */
export function takeFlash(
  ctx: Pick<ConsoleContext, 'cookies'>,
  req: Request,
  res: Response,
): Flash | undefined {
  const name = ctx.cookies.flashName(req);
  const value = ctx.cookies.read(req, name);
  if (value === undefined) return undefined;
  ctx.cookies.clear(req, res, name);
  if (!/^[A-Za-z0-9_-]{1,8000}$/.test(value)) return undefined;
  try {
    const { k, t } = JSON.parse(Buffer.from(value, 'base64url').toString('utf8')) as {
      k?: unknown;
      t?: unknown;
    };
    if ((k !== 'ok' && k !== 'error') || typeof t !== 'string' || t === '') return undefined;
    return { kind: k, text: t };
  } catch {
    return undefined;
  }
}

/**
 * Parses a multipart form (a file upload) into fields, each file as its text under its field's
 * name (left out when no file was chosen), so that the checks above read it as any form. Bodies
 * over `limit` are refused (413) unread.
 */
export function multipartForm(limit: string): RequestHandler[] {
  return [
    express.raw({ type: 'multipart/form-data', limit }),
    (req: Request, _res: Response, next: NextFunction) => {
      if (!Buffer.isBuffer(req.body)) {
        next();
        return;
      }
      const type = req.headers['content-type'] ?? '';
      new Response(req.body, { headers: { 'content-type': type } })
        .formData()
        .then(async (data) => {
          const fields: Record<string, string> = {};
          for (const [name, value] of data.entries()) {
            if (typeof value === 'string') fields[name] ??= value;
            else if (value.size > 0) fields[name] = await value.text();
          }
          req.body = fields;
          next();
        })
        .catch(() => next(new AppError('INVALID_INPUT', 'The form could not be read: send it again.')));
    },
  ];
}

/** The label rows of a form (`labelKey`, `labelValue`), blank rows left out, as typed. */
export function labelRowsOf(f: Pick<FormRequest, 'all'>): [string, string][] {
  const keys = f.all('labelKey');
  const values = f.all('labelValue');
  return keys
    .map((k, i): [string, string] => [k.trim(), (values[i] ?? '').trim()])
    .filter(([k, v]) => k !== '' || v !== '');
}

/** The labels of a form's rows; INVALID_INPUT for a key given twice (the domain checks the rest). */
export function labelsOf(rows: readonly (readonly [string, string])[]): Record<string, string> {
  const seen = new Set<string>();
  for (const [k] of rows) {
    if (seen.has(k))
      throw new AppError('INVALID_INPUT', `The label ${k} is given twice: give each key once.`, {
        details: { attribute: 'labels' },
      });
    seen.add(k);
  }
  return Object.fromEntries(rows);
}
