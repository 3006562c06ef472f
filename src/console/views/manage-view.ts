/**
 * What the management pages share: their frame (the page head and the tabs of the management
 * pages), form fields, rows of labels, a confirmation step before what cannot be undone, a secret
 * shown once with a copy button, and a refusal's code and message.
 */
import type { AppError } from '../../errors/app-error.ts';
import { html, type Html } from '../html.ts';
import type { ConsoleSession } from '../sessions.ts';
import { paths } from './format.ts';
import { pageHeader } from './layout.ts';

export type ManageSection = 'devices' | 'apikeys' | 'tokens' | 'users' | 'alerting' | 'audit';

const SECTIONS: { key: ManageSection; label: string; href: string }[] = [
  { key: 'devices', label: 'Devices', href: paths.manageDevices },
  { key: 'apikeys', label: 'API keys', href: paths.apiKeys },
  { key: 'tokens', label: 'Tokens', href: paths.tokens },
  { key: 'users', label: 'Users', href: paths.users },
  { key: 'alerting', label: 'Channels and routes', href: paths.alerting },
  { key: 'audit', label: 'Audit log', href: paths.audit },
];

/** A management page: its tabs, its head, a refusal when there was one, its content. */
export function manageFrame(o: {
  section: ManageSection;
  title: string;
  sub?: Html | string;
  actions?: Html;
  error?: AppError | undefined;
  body: Html;
}): Html {
  return html`<nav class="subnav" aria-label="Manage"><ul>${SECTIONS.map(
    (s) =>
      html`<li><a href="${s.href}"${s.key === o.section ? html` aria-current="page"` : ''}>${s.label}</a></li>`,
  )}</ul></nav>
${pageHeader(o.title, o.sub, o.actions ? html`<div class="page-actions">${o.actions}</div>` : undefined)}
${o.error ? refusalNotice(o.error) : ''}
${o.body}`;
}

/** The code and message of a refusal, as a form shows it above itself. */
export function refusalNotice(err: AppError): Html {
  const attribute = err.details?.attribute;
  return html`<div class="notice notice-error refusal" role="alert"><span class="code">${err.code}</span> ${err.message}${
    typeof attribute === 'string'
      ? html` <span class="small">(field <span class="mono">${attribute}</span>)</span>`
      : ''
  }</div>`;
}

/** The session's anti-forgery token as a form field. */
export const csrfField = (session: ConsoleSession): Html =>
  html`<input type="hidden" name="_csrf" value="${session.csrf}">`;

export const hidden = (name: string, value: string | number): Html =>
  html`<input type="hidden" name="${name}" value="${String(value)}">`;

/** A labelled text input. */
export function textField(o: {
  id: string;
  name: string;
  label: string;
  value?: string | undefined;
  hint?: string | Html;
  required?: boolean;
  type?: 'text' | 'password' | 'number' | 'url' | 'datetime-local' | 'email';
  placeholder?: string;
  autocomplete?: string;
  readonly?: boolean;
  attrs?: Html;
}): Html {
  const hintId = `${o.id}-hint`;
  return html`<div class="field"><label for="${o.id}">${o.label}</label><input id="${o.id}" name="${o.name}" type="${o.type ?? 'text'}" value="${o.value ?? ''}"${o.required ? html` required` : ''}${o.readonly ? html` readonly` : ''}${o.placeholder ? html` placeholder="${o.placeholder}"` : ''} autocomplete="${o.autocomplete ?? 'off'}"${o.hint ? html` aria-describedby="${hintId}"` : ''}${o.attrs ?? ''}>${o.hint ? html`<p class="hint" id="${hintId}">${o.hint}</p>` : ''}</div>`;
}

/** A labelled select of `options` (value, label). */
export function selectField(o: {
  id: string;
  name: string;
  label: string;
  options: readonly (readonly [string, string])[];
  value?: string | undefined;
  hint?: string | Html;
}): Html {
  return html`<div class="field"><label for="${o.id}">${o.label}</label><select id="${o.id}" name="${o.name}">${o.options.map(
    ([value, label]) =>
      html`<option value="${value}"${value === o.value ? html` selected` : ''}>${label}</option>`,
  )}</select>${o.hint ? html`<p class="hint">${o.hint}</p>` : ''}</div>`;
}

/** Blank rows of labels offered besides a device's (or a route's) own. */
const BLANK_LABEL_ROWS = 3;

/**
 * Labels as rows of key and value (`labelKey`, `labelValue`, repeated): the ones given, then a few
 * blank rows for new ones. A row left blank is no label.
 */
export function labelRows(labels: readonly (readonly [string, string])[], idPrefix: string): Html {
  const rows = [...labels, ...Array.from({ length: BLANK_LABEL_ROWS }, () => ['', ''] as const)];
  return html`<fieldset class="label-rows"><legend>Labels</legend>
<p class="hint">A key (a letter, then letters, digits, <code>_ . -</code>) and its value per row; leave a row blank for none.</p>
${rows.map(
  ([k, v], i) =>
    html`<div class="label-row"><label class="visually-hidden" for="${idPrefix}-k${i}">Label ${i + 1} key</label><input id="${idPrefix}-k${i}" name="labelKey" value="${k}" placeholder="key" autocomplete="off"><span aria-hidden="true">=</span><label class="visually-hidden" for="${idPrefix}-v${i}">Label ${i + 1} value</label><input id="${idPrefix}-v${i}" name="labelValue" value="${v}" placeholder="value" autocomplete="off"></div>`,
)}
</fieldset>`;
}

/**
 * The step before a change that cannot be undone: what it does, and a button that does it (a POST
 * to `action` with `fields`), beside a way back.
 */
export function confirmBody(o: {
  session: ConsoleSession;
  section: ManageSection;
  title: string;
  text: Html | string;
  action: string;
  fields?: Record<string, string | number>;
  button: string;
  back: string;
  error?: AppError | undefined;
}): Html {
  return manageFrame({
    section: o.section,
    title: o.title,
    error: o.error,
    body: html`<section class="card confirm">
<p>${o.text}</p>
<form method="post" action="${o.action}" class="actions">
${csrfField(o.session)}
${Object.entries(o.fields ?? {}).map(([k, v]) => hidden(k, v))}
<button type="submit" class="btn btn-danger">${o.button}</button>
<a class="btn btn-ghost" href="${o.back}">Cancel</a>
</form>
</section>`,
  });
}

/**
 * A secret shown once (a new API key, token or signing secret): in a read-only field with a copy
 * button, and the warning that it is not shown again.
 */
export function secretOnce(o: { id: string; label: string; secret: string; about: Html | string }): Html {
  return html`<section class="card secret-once" aria-labelledby="${o.id}-h">
<h2 id="${o.id}-h">${o.label}</h2>
<div class="notice notice-warning" role="alert"><strong>Copy it now.</strong> Vigil keeps only a hash of it and will not show it again: when it is lost, make another.</div>
<div class="secret-row"><label class="visually-hidden" for="${o.id}">${o.label}</label><input id="${o.id}" class="mono secret" type="text" value="${o.secret}" readonly spellcheck="false" autocomplete="off"><button type="button" class="btn" data-copy="${o.id}">Copy</button></div>
<p class="small">${o.about}</p>
</section>`;
}

/** A time as the management pages show it: exact UTC, or `never`. */
export function utcText(iso: string | null | undefined, never = 'never'): string {
  if (!iso) return never;
  return `${iso.slice(0, 19).replace('T', ' ')} UTC`;
}
