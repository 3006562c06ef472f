/**
 * The audit log: who changed what and when, newest first, filtered by actor, action, target and
 * time, and paged by the log's cursor; each entry's change shown field by field, before → after.
 */
import type { AuditEntry } from '../../audit/audit-log.ts';
import type { AppError } from '../../errors/app-error.ts';
import { html, type Html } from '../html.ts';
import { paths, query } from './format.ts';
import { manageFrame, textField, utcText } from './manage-view.ts';

export interface AuditFilterValues {
  actor: string;
  action: string;
  target: string;
  /** `YYYY-MM-DDTHH:MM`, UTC (a datetime-local field's value). */
  from: string;
  to: string;
}

export const auditFilterParams = (v: AuditFilterValues): Record<string, string | undefined> => ({
  actor: v.actor,
  action: v.action,
  target: v.target,
  from: v.from,
  to: v.to,
});

export function auditBody(o: {
  entries: AuditEntry[];
  next: string | null;
  filter: AuditFilterValues;
  /** Whether this is a later page (a cursor was given). */
  paged: boolean;
  error?: AppError | undefined;
}): Html {
  const f = o.filter;
  const filtered = Object.values(f).some((x) => x !== '');
  return manageFrame({
    section: 'audit',
    title: 'Audit log',
    sub: 'Every change to the environment, newest first: by the console, the API and the vigil command.',
    error: o.error,
    body: html`<form class="filters" method="get" action="${paths.audit}">
${textField({ id: 'au-actor', name: 'actor', label: 'Actor', value: f.actor, placeholder: 'alice, token:ci, cli:root' })}
${textField({ id: 'au-action', name: 'action', label: 'Action', value: f.action, placeholder: 'device.update or device' })}
${textField({ id: 'au-target', name: 'target', label: 'Target', value: f.target, placeholder: 'freezer-7' })}
${textField({ id: 'au-from', name: 'from', label: 'From (UTC)', value: f.from, type: 'datetime-local' })}
${textField({ id: 'au-to', name: 'to', label: 'Until (UTC)', value: f.to, type: 'datetime-local' })}
<div class="field field-actions"><button type="submit" class="btn btn-primary">Filter</button> <a class="btn btn-ghost" href="${paths.audit}">Clear</a></div>
</form>
<div class="card table-card table-wrap">
<table class="table audit">
<thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">What</th><th scope="col">Change</th></tr></thead>
<tbody id="audit-rows">${o.entries.map(entryRow)}</tbody>
</table>
</div>
${o.entries.length === 0 ? html`<p class="empty">${filtered ? 'No entry matches these filters.' : 'No changes recorded yet.'}</p>` : ''}
${
  o.next !== null || o.paged
    ? html`<p class="pager"><span class="muted small">${o.entries.length} entries on this page</span>${o.paged ? html`<a class="btn btn-ghost" href="${paths.audit + query(auditFilterParams(f))}">Newest</a>` : ''}${
        o.next !== null
          ? html`<a class="btn" href="${paths.audit + query({ ...auditFilterParams(f), before: o.next })}">Older</a>`
          : ''
      }</p>`
    : ''
}`,
  });
}

function entryRow(e: AuditEntry): Html {
  return html`<tr data-key="${e.id}">
<td data-label="When"><time datetime="${e.atUTC}" title="${utcText(e.atUTC)}">${utcText(e.atUTC)}</time></td>
<td data-label="Who"><span class="mono">${e.actor}</span></td>
<td data-label="What"><span class="tag action">${e.action}</span><div class="strong break">${e.target}</div></td>
<td data-label="Change">${changeList(e)}</td>
</tr>`;
}

/**
 * The change field by field: a creation's fields (+), a deletion's (−), an update's fields that
 * differ (old → new), then the details.
 */
export function changeList(e: Pick<AuditEntry, 'before' | 'after' | 'details'>): Html {
  const before = flatten(e.before);
  const after = flatten(e.after);
  const items: Html[] = [];
  if (e.before === undefined && e.after !== undefined) {
    for (const [k, v] of after)
      items.push(
        html`<li class="added"><span class="chg-field">${k}</span> <span class="after">${v}</span></li>`,
      );
  } else if (e.after === undefined && e.before !== undefined) {
    for (const [k, v] of before)
      items.push(
        html`<li class="removed"><span class="chg-field">${k}</span> <span class="before">${v}</span></li>`,
      );
  } else {
    for (const k of new Set([...before.keys(), ...after.keys()])) {
      const [b, a] = [before.get(k), after.get(k)];
      if (b === a) continue;
      items.push(
        html`<li class="changed"><span class="chg-field">${k}</span> <span class="before">${b ?? '—'}</span> <span class="arrow" aria-label="becomes">→</span> <span class="after">${a ?? '—'}</span></li>`,
      );
    }
  }
  for (const [k, v] of flatten(e.details))
    items.push(html`<li class="detail"><span class="chg-field">${k}</span> <span>${v}</span></li>`);
  if (items.length === 0) return html`<span class="muted small">no field changed</span>`;
  return html`<ul class="changes-list">${items}</ul>`;
}

/** Most fields shown of one record (a definition's spec has many). */
const MAX_FIELDS = 40;

/** A record as `field.sub: value` texts, in order; a list of records by position (`rules[0].above`), one of values as one value. */
function flatten(value: unknown): Map<string, string> {
  const out = new Map<string, string>();
  const isRecord = (x: unknown) => x !== null && typeof x === 'object' && !Array.isArray(x);
  const walk = (v: unknown, path: string) => {
    if (out.size >= MAX_FIELDS) return;
    if (Array.isArray(v) && v.some(isRecord)) {
      v.forEach((x, i) => walk(x, `${path}[${i}]`));
      return;
    }
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      const entries = Object.entries(v);
      if (entries.length === 0 && path !== '') out.set(path, '{}');
      for (const [k, x] of entries) walk(x, path === '' ? k : `${path}.${k}`);
      return;
    }
    if (path === '') return;
    out.set(path, typeof v === 'string' ? v : (JSON.stringify(v) ?? ''));
  };
  walk(value, '');
  return out;
}
