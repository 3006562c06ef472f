/**
 * An API key's auto-create rule on the API keys page: what the key may create of the devices it
 * does not know (a LoRaWAN uplink naming a device Vigil has not been told of) — their definition,
 * their labels besides the uplink's devEui, and how many at most —, in the new key's form and on a
 * page of its own that changes or clears it.
 */
import type { AppError } from '../../errors/app-error.ts';
import type { PublicApiKey } from '../../tenancy/admin-credentials.ts';
import { AUTO_CREATE_MAX_DEVICES } from '../../tenancy/types.ts';
import { html, type Html } from '../html.ts';
import type { ConsoleSession } from '../sessions.ts';
import { paths } from './format.ts';
import { definitionValue, type DefinitionChoice } from './manage-devices-view.ts';
import { csrfField, hidden, labelRows, manageFrame, textField } from './manage-view.ts';

/** The rule's fields as the form holds them: the definition's select value ('' for none). */
export interface AutoCreateValues {
  definition: string;
  labels: [string, string][];
  maxDevices: string;
}

export const NO_AUTO_CREATE: AutoCreateValues = { definition: '', labels: [], maxDevices: '' };

export const autoCreateValuesOf = (k: PublicApiKey): AutoCreateValues =>
  k.autoCreate === null
    ? NO_AUTO_CREATE
    : {
        definition: definitionValue(k.autoCreate),
        labels: Object.entries(k.autoCreate.labels),
        maxDevices: String(k.autoCreate.maxDevices),
      };

/** The page's path of a key's rule. */
export const autoCreatePath = (id: string) => `${paths.apiKeys}/${encodeURIComponent(id)}/auto-create`;

/** The fields of a rule: a definition (none: no rule), labels, the most devices. */
export function autoCreateFields(
  v: AutoCreateValues,
  definitions: readonly DefinitionChoice[],
  idPrefix: string,
): Html {
  const option = (d: DefinitionChoice) =>
    html`<option value="${definitionValue(d)}"${definitionValue(d) === v.definition ? html` selected` : ''}>${d.definitionName}${d.definitionIsPublic ? ' (public)' : ''}</option>`;
  const own = definitions.filter((d) => !d.definitionIsPublic);
  const shared = definitions.filter((d) => d.definitionIsPublic);
  return html`<div class="field"><label for="${idPrefix}-definition">Create unknown devices of</label><select id="${idPrefix}-definition" name="autoCreateDefinition" aria-describedby="${idPrefix}-definition-hint">
<option value=""${v.definition === '' ? html` selected` : ''}>No one: refuse devices it does not know</option>
${own.length > 0 ? html`<optgroup label="This environment">${own.map(option)}</optgroup>` : ''}
${shared.length > 0 ? html`<optgroup label="Public">${shared.map(option)}</optgroup>` : ''}
</select><p class="hint" id="${idPrefix}-definition-hint">An uplink from a network server (The Things Stack, ChirpStack) naming a device Vigil does not know creates it, with the uplink’s DevEUI as its <code>devEui</code> label.</p></div>
${labelRows(v.labels, `${idPrefix}-label`)}
${textField({ id: `${idPrefix}-max`, name: 'autoCreateMax', label: 'At most (devices)', value: v.maxDevices, attrs: html` inputmode="numeric"`, hint: `1 to ${AUTO_CREATE_MAX_DEVICES.toLocaleString('en')}; the devices its predecessors created by rotation count too.` })}`;
}

/** A key's rule in one cell: its definition, labels and how many of its devices exist. */
export function autoCreateCell(k: PublicApiKey): Html {
  const link = html`<a class="btn btn-small" href="${autoCreatePath(k.id)}">${k.autoCreate ? 'Change' : 'Set'}</a>`;
  if (k.autoCreate === null) return html`<span class="row-actions"><span class="muted">off</span>${link}</span>`;
  const r = k.autoCreate;
  const labels = Object.entries(r.labels).map(([key, v]) => html` <span class="tag">${key}=${v}</span>`);
  return html`<span class="row-actions"><span>${r.definitionName}${r.definitionIsPublic ? html` <span class="tag">public</span>` : ''}<span class="muted small"> · ${k.devicesCreated} of ${r.maxDevices} created</span>${labels}</span>${link}</span>`;
}

export function autoCreateBody(o: {
  session: ConsoleSession;
  apiKey: PublicApiKey;
  values: AutoCreateValues;
  definitions: readonly DefinitionChoice[];
  error?: AppError | undefined;
}): Html {
  const k = o.apiKey;
  return manageFrame({
    section: 'apikeys',
    title: `Auto-create of ${k.name}`,
    sub: html`<span class="mono">${k.id}</span> · ${k.devicesCreated} device${k.devicesCreated === 1 ? '' : 's'} created so far`,
    error: o.error,
    body: html`<form class="card stack-form manage-form narrow-form" method="post" action="${autoCreatePath(k.id)}">
${csrfField(o.session)}
${hidden('revision', k.revision)}
${autoCreateFields(o.values, o.definitions, 'auto')}
<div class="actions"><button type="submit" class="btn btn-primary">Save</button><a class="btn btn-ghost" href="${paths.apiKeys}">Cancel</a></div>
</form>`,
  });
}
