/**
 * Who and what may reach the environment: API keys (create, rotate with an overlap, revoke, their
 * auto-create rules: manage-auto-create-view.ts),
 * service tokens (create with scopes and expiry, last use, revoke) and users (create with a role,
 * change the role, disable and enable, reset MFA, delete). A new key or token is shown once.
 */
import type { AppError } from '../../errors/app-error.ts';
import type { PublicUser } from '../../tenancy/admin-users.ts';
import type { PublicApiKey, PublicToken } from '../../tenancy/admin-credentials.ts';
import { USER_ROLES } from '../../tenancy/types.ts';
import { html, type Html } from '../html.ts';
import type { ConsoleSession } from '../sessions.ts';
import { paths } from './format.ts';
import {
  autoCreateCell,
  autoCreateFields,
  NO_AUTO_CREATE,
  type AutoCreateValues,
} from './manage-auto-create-view.ts';
import type { DefinitionChoice } from './manage-devices-view.ts';
import {
  confirmBody,
  csrfField,
  hidden,
  manageFrame,
  secretOnce,
  selectField,
  textField,
  utcText,
} from './manage-view.ts';

/** How long a rotated key keeps working beside its successor, as the rotate form offers it. */
export const OVERLAPS: readonly (readonly [string, string])[] = [
  ['60', '1 hour'],
  ['1440', '1 day'],
  ['10080', '7 days'],
  ['0', 'No overlap: refuse it at once'],
];

/** A token's lifetime, as the create form offers it (days; '' = never). */
export const TOKEN_LIFETIMES: readonly (readonly [string, string])[] = [
  ['30', '30 days'],
  ['90', '90 days'],
  ['365', '1 year'],
  ['1', '1 day'],
  ['', 'Never expires'],
];

export const SCOPE_CHOICES: readonly (readonly [string, string])[] = [
  ['read', 'read: every read endpoint'],
  ['read,write', 'read,write: also acknowledge alarms, run parsers'],
  ['read,write,admin', 'read,write,admin: also manage the environment'],
];

// API keys.

export function apiKeysBody(o: {
  session: ConsoleSession;
  keys: PublicApiKey[];
  /** What a new key's auto-create rule may choose from. */
  definitions: readonly DefinitionChoice[];
  nowMs: number;
  error?: AppError | undefined;
  name?: string;
  autoCreate?: AutoCreateValues;
  shown?: Html;
}): Html {
  return manageFrame({
    section: 'apikeys',
    title: 'API keys',
    sub: 'What devices send with their payloads (in the gateway’s URL, or as the MQTT password).',
    error: o.error,
    body: html`${o.shown ?? ''}
<div class="card table-card table-wrap">
<table class="table api-keys">
<thead><tr><th scope="col">Name</th><th scope="col">Created</th><th scope="col">Works until</th><th scope="col">Auto-create</th><th scope="col">Rotate</th><th scope="col">Revoke</th></tr></thead>
<tbody id="api-key-rows">${o.keys.map((k) => keyRow(o.session, k, o.nowMs))}</tbody>
</table>
</div>
${o.keys.length === 0 ? html`<p class="empty">No API keys: devices of this environment cannot send.</p>` : ''}
<form class="card stack-form manage-form narrow-form" method="post" action="${paths.apiKeys}/create">
<h2>New API key</h2>
${csrfField(o.session)}
${textField({ id: 'key-name', name: 'name', label: 'Name', value: o.name ?? '', hint: 'To find it by, e.g. the site or the batch of devices that use it; key-<id> when empty.' })}
${autoCreateFields(o.autoCreate ?? NO_AUTO_CREATE, o.definitions, 'key-auto')}
<div class="actions"><button type="submit" class="btn btn-primary">Create API key</button></div>
</form>`,
  });
}

function keyRow(session: ConsoleSession, k: PublicApiKey, nowMs: number): Html {
  const expiring = k.expiresUTC !== null;
  return html`<tr data-key="${k.id}"${expiring ? html` class="is-expiring"` : ''}>
<td data-label="Name"><span class="strong">${k.name}</span><div class="mono muted small">${k.id}</div></td>
<td data-label="Created">${utcText(k.createdUTC)}</td>
<td data-label="Works until">${expiring ? html`<span class="tag tag-warning" title="Replaced by a rotation">${utcText(k.expiresUTC)}${Date.parse(k.expiresUTC ?? '') <= nowMs ? ' (ended)' : ''}</span>` : html`<span class="muted">until revoked</span>`}</td>
<td data-label="Auto-create">${autoCreateCell(k)}</td>
<td data-label="Rotate">${
    expiring
      ? html`<span class="muted small">rotated</span>`
      : html`<form class="inline-form" method="post" action="${paths.apiKeys}/rotate">${csrfField(session)}${hidden('id', k.id)}<label class="visually-hidden" for="overlap-${k.id}">Overlap of ${k.name}</label><select id="overlap-${k.id}" name="overlapMinutes">${OVERLAPS.map(([v, l]) => html`<option value="${v}"${v === '1440' ? html` selected` : ''}>${l}</option>`)}</select><button type="submit" class="btn btn-small">Rotate</button></form>`
  }</td>
<td data-label="Revoke"><a class="btn btn-small btn-danger-ghost" href="${paths.apiKeys}/${encodeURIComponent(k.id)}/revoke">Revoke</a></td>
</tr>`;
}

export function newKeyShown(created: { name: string; key: string }): Html {
  return secretOnce({
    id: 'new-key',
    label: `API key ${created.name}`,
    secret: created.key,
    about: html`Devices send it in the gateway’s URL (<code>POST /gateway/submit/&lt;key&gt;</code>) or as their MQTT password.`,
  });
}

export function rotatedKeyShown(
  r: { name: string; key: string; previous: { name: string; expiresUTC: string } },
  nowMs: number,
): Html {
  const at = Date.parse(r.previous.expiresUTC);
  return secretOnce({
    id: 'new-key',
    label: `API key ${r.name}, replacing ${r.previous.name}`,
    secret: r.key,
    about:
      at <= nowMs
        ? html`The old key ${r.previous.name} is refused from now on.`
        : html`The old key <strong>${r.previous.name}</strong> keeps working until <strong>${utcText(r.previous.expiresUTC)}</strong>, then is refused: give the devices the new key before then.`,
  });
}

export function revokeKeyBody(session: ConsoleSession, k: PublicApiKey, error?: AppError): Html {
  return confirmBody({
    session,
    section: 'apikeys',
    title: `Revoke API key ${k.name}?`,
    text: 'Every device that sends with it is refused from now on (within a few seconds everywhere). This cannot be undone: a key revoked stays revoked.',
    action: `${paths.apiKeys}/${encodeURIComponent(k.id)}/revoke`,
    button: 'Revoke API key',
    back: paths.apiKeys,
    error,
  });
}

// Service tokens.

export function tokensBody(o: {
  session: ConsoleSession;
  tokens: PublicToken[];
  error?: AppError | undefined;
  values?: { name: string; scopes: string; days: string };
  shown?: Html;
}): Html {
  const v = o.values ?? { name: '', scopes: 'read', days: '90' };
  return manageFrame({
    section: 'tokens',
    title: 'Service tokens',
    sub: 'Bearer tokens for automation and scripts, each with its scopes; users sign in with their own.',
    error: o.error,
    body: html`${o.shown ?? ''}
<div class="card table-card table-wrap">
<table class="table tokens">
<thead><tr><th scope="col">Name</th><th scope="col">Scopes</th><th scope="col">Created</th><th scope="col">Expires</th><th scope="col">Last used</th><th scope="col">Revoke</th></tr></thead>
<tbody id="token-rows">${o.tokens.map(
      (t) => html`<tr data-key="${t.id}">
<td data-label="Name"><span class="strong">${t.name}</span><div class="mono muted small">${t.id}</div></td>
<td data-label="Scopes"><span class="mono">${t.scopes.join(',')}</span></td>
<td data-label="Created">${utcText(t.createdUTC)}</td>
<td data-label="Expires">${utcText(t.expiresUTC)}</td>
<td data-label="Last used">${t.lastUsedUTC ? html`<time datetime="${t.lastUsedUTC}" title="${utcText(t.lastUsedUTC)}" data-rel>${utcText(t.lastUsedUTC)}</time>` : html`<span class="muted">never</span>`}</td>
<td data-label="Revoke"><a class="btn btn-small btn-danger-ghost" href="${paths.tokens}/${encodeURIComponent(t.id)}/revoke">Revoke</a></td>
</tr>`,
    )}</tbody>
</table>
</div>
${o.tokens.length === 0 ? html`<p class="empty">No service tokens.</p>` : ''}
<form class="card stack-form manage-form narrow-form" method="post" action="${paths.tokens}/create">
<h2>New service token</h2>
${csrfField(o.session)}
${textField({ id: 'token-name', name: 'name', label: 'Name', value: v.name, hint: 'What uses it (token:<name> in the audit log); token-<id> when empty.' })}
${selectField({ id: 'token-scopes', name: 'scopes', label: 'Scopes', options: SCOPE_CHOICES, value: v.scopes })}
${selectField({ id: 'token-expiry', name: 'expiresInDays', label: 'Expires', options: TOKEN_LIFETIMES, value: v.days })}
<div class="actions"><button type="submit" class="btn btn-primary">Create token</button></div>
</form>`,
  });
}

export function newTokenShown(t: {
  name: string;
  token: string;
  scopes: string[];
  expiresUTC: string | null;
}): Html {
  return secretOnce({
    id: 'new-token',
    label: `Token ${t.name}`,
    secret: t.token,
    about: html`Send it as <code>Authorization: Bearer &lt;token&gt;</code>. Scopes ${t.scopes.join(',')}; ${t.expiresUTC ? `expires ${utcText(t.expiresUTC)}` : 'never expires'}.`,
  });
}

export function revokeTokenBody(session: ConsoleSession, t: PublicToken, error?: AppError): Html {
  return confirmBody({
    session,
    section: 'tokens',
    title: `Revoke token ${t.name}?`,
    text: 'What uses it is refused from now on (within a few seconds everywhere). This cannot be undone.',
    action: `${paths.tokens}/${encodeURIComponent(t.id)}/revoke`,
    button: 'Revoke token',
    back: paths.tokens,
    error,
  });
}

// Users.

const ROLE_OPTIONS = USER_ROLES.map((r) => [r, r] as const);

export function usersBody(o: {
  session: ConsoleSession;
  users: PublicUser[];
  error?: AppError | undefined;
  values?: { username: string; role: string };
}): Html {
  const v = o.values ?? { username: '', role: 'operator' };
  return manageFrame({
    section: 'users',
    title: 'Users',
    sub: 'admin manages the environment, operator also acknowledges alarms and runs parsers, viewer only reads.',
    error: o.error,
    body: html`<div class="card table-card table-wrap">
<table class="table users">
<thead><tr><th scope="col">User</th><th scope="col">Role</th><th scope="col">Sign-in</th><th scope="col">Actions</th></tr></thead>
<tbody id="user-rows">${o.users.map((u) => userRow(o.session, u))}</tbody>
</table>
</div>
<form class="card stack-form manage-form narrow-form" method="post" action="${paths.users}/create">
<h2>New user</h2>
${csrfField(o.session)}
${textField({ id: 'user-name', name: 'username', label: 'Username', value: v.username, required: true })}
${textField({ id: 'user-password', name: 'password', label: 'Password', type: 'password', required: true, autocomplete: 'new-password', hint: '8 to 1024 characters. Tell it to the user; they sign in with it.' })}
${selectField({ id: 'user-role', name: 'role', label: 'Role', options: ROLE_OPTIONS, value: v.role })}
<div class="actions"><button type="submit" class="btn btn-primary">Create user</button></div>
</form>`,
  });
}

function userRow(session: ConsoleSession, u: PublicUser): Html {
  const id = Buffer.from(u.username).toString('hex').slice(0, 40);
  const form = (action: string, label: string, cls = 'btn btn-small', extra: Html | string = '') =>
    html`<form class="inline-form" method="post" action="${paths.users}/${action}">${csrfField(session)}${hidden('username', u.username)}${hidden('revision', u.revision)}${extra}<button type="submit" class="${cls}">${label}</button></form>`;
  return html`<tr data-key="${u.username}"${u.disabled ? html` class="is-disabled"` : ''}>
<td data-label="User"><span class="strong">${u.username}</span>${u.username === session.username ? html` <span class="tag">you</span>` : ''}<div class="muted small">since ${utcText(u.createdUTC)}</div></td>
<td data-label="Role">${form(
    'role',
    'Change',
    'btn btn-small',
    html`<label class="visually-hidden" for="role-${id}">Role of ${u.username}</label><select id="role-${id}" name="role">${USER_ROLES.map((r) => html`<option value="${r}"${r === u.role ? html` selected` : ''}>${r}</option>`)}</select>`,
  )}</td>
<td data-label="Sign-in"><span class="stack">${u.disabled ? html`<span class="pill st-error">Disabled</span>` : html`<span class="pill st-ok">Enabled</span>`}${u.mfaEnabled ? html`<span class="tag">MFA</span>` : ''}</span></td>
<td data-label="Actions"><span class="row-actions">${u.disabled ? form('enable', 'Enable') : form('disable', 'Disable')}${
    u.mfaEnabled ? form('reset-mfa', 'Reset MFA') : ''
  }<a class="btn btn-small btn-danger-ghost" href="${paths.users}/${encodeURIComponent(u.username)}/delete">Delete</a></span></td>
</tr>`;
}

export function deleteUserBody(session: ConsoleSession, u: PublicUser, error?: AppError): Html {
  return confirmBody({
    session,
    section: 'users',
    title: `Delete user ${u.username}?`,
    text: 'They cannot sign in any more, and their sessions and login tokens end at once. A user created again under this name starts afresh.',
    action: `${paths.users}/${encodeURIComponent(u.username)}/delete`,
    button: 'Delete user',
    back: paths.users,
    error,
  });
}
