/**
 * The audit log in the console (admins): `/audit/list` with the page's filters and its cursor.
 */
import type { Router } from 'express';
import type { AuditEntry } from '../audit/audit-log.ts';
import type { ConsoleContext } from './console-context.ts';
import { adminPage, isRefusal, runAs } from './manage-forms.ts';
import { auditBody, type AuditFilterValues } from './views/audit-view.ts';

/** Entries per page. */
const AUDIT_PAGE = 50;

export function manageAuditRoutes(router: Router, ctx: ConsoleContext): void {
  adminPage(router, ctx, '/manage/audit', async (req, res, session) => {
    const q = ctx.queryOf(req);
    const text = (name: string) => (q.get(name) ?? '').trim().slice(0, 200);
    const filter: AuditFilterValues = {
      actor: text('actor'),
      action: text('action'),
      target: text('target'),
      from: text('from'),
      to: text('to'),
    };
    const before = text('before');
    const input: Record<string, unknown> = { limit: AUDIT_PAGE };
    for (const k of ['actor', 'action', 'target'] as const) if (filter[k] !== '') input[k] = filter[k];
    if (filter.from !== '') input.startUTC = unixSeconds(filter.from);
    if (filter.to !== '') input.endUTC = unixSeconds(filter.to);
    if (before !== '') input.before = before;
    const show = (status: number, body: ReturnType<typeof auditBody>) =>
      ctx.render(res, status, { title: 'Audit log', session, active: 'manage', body });
    try {
      const page = await runAs<{ entries: AuditEntry[]; next: string | null }>(
        ctx,
        session,
        '/audit/list',
        input,
      );
      show(200, auditBody({ entries: page.entries, next: page.next, filter, paged: before !== '' }));
    } catch (err) {
      if (!isRefusal(err)) throw err;
      show(err.status, auditBody({ entries: [], next: null, filter, paged: false, error: err }));
    }
  });
}

/** A datetime-local value (read as UTC) as UNIX seconds; the text itself when it is not one (refused). */
function unixSeconds(local: string): number | string {
  const ms = Date.parse(/Z$|[+-]\d\d:\d\d$/.test(local) ? local : `${local}Z`);
  return Number.isFinite(ms) ? ms / 1000 : local;
}
