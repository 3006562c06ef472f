/**
 * Managing devices: the list with labels and availability, the create and edit form, the
 * confirmation of a deletion, and the bulk import with its dry run's preview.
 */
import type { AppError } from '../../errors/app-error.ts';
import type { ManagedDevice } from '../../management/device-shape.ts';
import type { ImportFailure, ImportReport } from '../../management/device-import.ts';
import type { DeviceRecord } from '../../tenancy/types.ts';
import { html, type Html } from '../html.ts';
import type { ConsoleSession } from '../sessions.ts';
import { paths, query } from './format.ts';
import { labelFilterText, labelTags } from './label-filter.ts';
import { confirmBody, csrfField, hidden, labelRows, manageFrame, textField } from './manage-view.ts';

/** A definition a device may use, as the select offers it. */
export interface DefinitionChoice {
  definitionName: string;
  definitionIsPublic: boolean;
}

/** The select's value of a definition: `private:Name`, `public:Name`. */
export const definitionValue = (d: DefinitionChoice): string =>
  `${d.definitionIsPublic ? 'public' : 'private'}:${d.definitionName}`;

/** A definition from the select's value; undefined for none. */
export function definitionOfValue(value: string): DefinitionChoice | undefined {
  const m = /^(public|private):(.+)$/.exec(value);
  return m ? { definitionIsPublic: m[1] === 'public', definitionName: m[2] ?? '' } : undefined;
}

export interface DeviceListModel {
  session: ConsoleSession;
  devices: DeviceRecord[];
  total: number;
  labels: Record<string, string> | undefined;
  labelsError?: string | undefined;
  /** The name after which the next page starts; undefined at the end. */
  next: string | undefined;
  after: string | undefined;
}

export function deviceListBody(m: DeviceListModel): Html {
  const filterText = labelFilterText(m.labels) ?? '';
  return manageFrame({
    section: 'devices',
    title: 'Devices',
    sub: `${m.total} ${m.total === 1 ? 'device' : 'devices'} in ${m.session.env}`,
    actions: html`<a class="btn btn-primary" href="${paths.newDevice}">New device</a>
<a class="btn" href="${paths.importDevices}">Import CSV</a>
<a class="btn" href="${paths.exportDevices}" download>Export CSV</a>`,
    body: html`<form class="toolbar" method="get" action="${paths.manageDevices}" role="search">
<label for="md-labels">Labels</label>
<input id="md-labels" name="labels" type="search" value="${filterText}" placeholder="site=amsterdam;floor=2" autocomplete="off">
<button type="submit" class="btn">Filter</button>
${m.labels ? html`<a class="btn btn-ghost" href="${paths.manageDevices}">Clear</a>` : ''}
</form>
${m.labelsError ? html`<div class="notice notice-error" role="alert">The labels filter ${m.labelsError}: write key=value;key=value.</div>` : ''}
<div class="card table-card table-wrap">
<table class="table manage-devices">
<thead><tr><th scope="col">Device</th><th scope="col">Definition</th><th scope="col">Labels</th><th scope="col">Availability</th><th scope="col">Actions</th></tr></thead>
<tbody id="manage-device-rows">${m.devices.map(
      (d) => html`<tr data-key="${d.deviceName}">
<td data-label="Device"><a class="strong" href="${paths.device(d.deviceName)}">${d.displayName}</a><div class="mono muted small">${d.deviceName}</div></td>
<td data-label="Definition">${d.definitionName}${d.definitionIsPublic ? html` <span class="tag">public</span>` : ''}</td>
<td data-label="Labels">${labelTags(d.labels)}</td>
<td data-label="Availability">${d.availabilityMinutes === undefined ? html`<span class="muted">definition’s</span>` : `${d.availabilityMinutes} min`}</td>
<td data-label="Actions"><span class="row-actions"><a class="btn btn-small" href="${paths.editDevice(d.deviceName)}">Edit</a><a class="btn btn-small btn-danger-ghost" href="${paths.deleteDevice(d.deviceName)}">Delete</a></span></td>
</tr>`,
    )}</tbody>
</table>
</div>
${m.devices.length === 0 ? html`<p class="empty">${m.labels ? 'No device has these labels.' : 'No devices yet: create one, or import a CSV file.'}</p>` : ''}
${
  m.next !== undefined || m.after !== undefined
    ? html`<p class="pager">${m.after !== undefined ? html`<a class="btn btn-ghost" href="${paths.manageDevices + query({ labels: filterText })}">First page</a>` : ''}${
        m.next !== undefined
          ? html`<a class="btn" href="${paths.manageDevices + query({ labels: filterText, after: m.next })}">Next page</a>`
          : ''
      }</p>`
    : ''
}`,
  });
}

/** What the device form shows: a device's values, or what was typed. */
export interface DeviceFormValues {
  deviceName: string;
  displayName: string;
  /** definitionValue() of the chosen definition. */
  definition: string;
  labels: [string, string][];
  availabilityMinutes: string;
  /** The revision an edit is based on. */
  revision?: number;
}

export const formValuesOf = (d: ManagedDevice): DeviceFormValues => ({
  deviceName: d.deviceName,
  displayName: d.displayName,
  definition: definitionValue(d),
  labels: Object.entries(d.labels),
  availabilityMinutes: d.availabilityMinutes === null ? '' : String(d.availabilityMinutes),
  revision: d.revision,
});

export function deviceFormBody(o: {
  session: ConsoleSession;
  mode: 'create' | 'edit';
  values: DeviceFormValues;
  definitions: DefinitionChoice[];
  error?: AppError | undefined;
  /** Set when the device changed meanwhile: the form holds its current values. */
  conflict?: boolean;
}): Html {
  const v = o.values;
  const editing = o.mode === 'edit';
  const own = o.definitions.filter((d) => !d.definitionIsPublic);
  const shared = o.definitions.filter((d) => d.definitionIsPublic);
  const option = (d: DefinitionChoice) =>
    html`<option value="${definitionValue(d)}"${definitionValue(d) === v.definition ? html` selected` : ''}>${d.definitionName}${d.definitionIsPublic ? ' (public)' : ''}</option>`;
  return manageFrame({
    section: 'devices',
    title: editing ? `Edit ${v.displayName || v.deviceName}` : 'New device',
    sub: editing
      ? html`<span class="mono">${v.deviceName}</span>`
      : 'A device sends its payloads with the environment’s API key and its device name.',
    error: o.error,
    body: html`${
      o.conflict
        ? html`<div class="notice notice-note" role="status">Someone changed this device while you edited it: the form now shows its current values (revision ${v.revision ?? ''}). Your change was not saved; make it again on these values.</div>`
        : ''
    }<form class="card stack-form manage-form" method="post" action="${editing ? paths.editDevice(v.deviceName) : paths.newDevice}">
${csrfField(o.session)}
${editing ? hidden('revision', v.revision ?? '') : ''}
${
  editing
    ? ''
    : textField({
        id: 'dev-name',
        name: 'deviceName',
        label: 'Device name',
        value: v.deviceName,
        required: true,
        hint: 'What the device sends as deviceName: letters, digits and _ . : - (not changed later).',
      })
}
${textField({ id: 'dev-display', name: 'displayName', label: 'Display name', value: v.displayName, hint: 'Shown in the console and in notifications; the device name when empty.' })}
<div class="field"><label for="dev-definition">Definition</label><select id="dev-definition" name="definition" required>
${v.definition === '' ? html`<option value="">Choose a definition</option>` : ''}
${own.length > 0 ? html`<optgroup label="This environment">${own.map(option)}</optgroup>` : ''}
${shared.length > 0 ? html`<optgroup label="Public">${shared.map(option)}</optgroup>` : ''}
</select></div>
${labelRows(v.labels, 'dev-label')}
${textField({ id: 'dev-availability', name: 'availabilityMinutes', label: 'Availability (minutes)', value: v.availabilityMinutes, attrs: html` inputmode="decimal"`, hint: 'Silence before an Availability event; empty: the definition’s timeout.' })}
<div class="actions"><button type="submit" class="btn btn-primary">${editing ? 'Save device' : 'Create device'}</button><a class="btn btn-ghost" href="${editing ? paths.device(v.deviceName) : paths.manageDevices}">Cancel</a></div>
</form>`,
  });
}

export function deleteDeviceBody(session: ConsoleSession, d: ManagedDevice, error?: AppError): Html {
  return confirmBody({
    session,
    section: 'devices',
    title: `Delete ${d.displayName}?`,
    text: html`This deletes device <span class="mono">${d.deviceName}</span> with its current values, alarms, events, threshold overrides and suppressions. Its history stays in InfluxDB until its retention ends. Payloads it sends afterwards are refused.`,
    action: paths.deleteDevice(d.deviceName),
    button: 'Delete device',
    back: paths.device(d.deviceName),
    error,
  });
}

export interface ImportModel {
  session: ConsoleSession;
  /** The CSV as sent (kept in the form to fix and send again). */
  csv: string;
  /** The dry run's report, or the import's refusal's. */
  report?: ImportReport | undefined;
  error?: AppError | undefined;
}

export function importBody(m: ImportModel): Html {
  const r = m.report;
  const changes = r ? r.created + r.updated : 0;
  const canImport = r !== undefined && r.dryRun && r.failedCount === 0 && changes > 0;
  return manageFrame({
    section: 'devices',
    title: 'Import devices',
    sub: 'Create and update devices from a CSV file: check it first, then import.',
    error: m.error,
    body: html`${r ? importReport(r) : ''}
<form class="card stack-form manage-form" method="post" action="${paths.importDevices}" enctype="multipart/form-data" data-busy>
${csrfField(m.session)}
<p class="small">A header row naming the columns — <code>deviceName</code>, <code>definitionName</code> (both required), <code>displayName</code>, <code>definitionIsPublic</code>, <code>labels</code> (<code>key=value;key=value</code>), <code>availabilityMinutes</code> — then one device per row. A device that exists is updated; a column left out leaves that field as it is, an empty cell puts it back. Nothing is written unless every row is valid. <a href="${paths.exportDevices}" download>Export the devices</a> for a file to start from.</p>
<div class="field"><label for="imp-file">CSV file</label><input id="imp-file" name="csvFile" type="file" accept=".csv,text/csv,text/plain"><p class="hint">Or paste the CSV below; a file chosen here is used instead.</p></div>
<div class="field"><label for="imp-csv">CSV</label><textarea id="imp-csv" name="csv" rows="10" spellcheck="false" class="mono" placeholder="deviceName,displayName,definitionName,labels&#10;freezer-7,Freezer 7,ColdRoom,site=amsterdam">${m.csv}</textarea></div>
<div class="actions">
<button type="submit" name="action" value="preview" class="btn${canImport ? '' : ' btn-primary'}">${r ? 'Check again' : 'Check'}</button>
${canImport ? html`<button type="submit" name="action" value="import" class="btn btn-primary">Import ${changes} ${changes === 1 ? 'device' : 'devices'}</button>` : ''}
<a class="btn btn-ghost" href="${paths.manageDevices}">Cancel</a>
</div>
</form>`,
  });
}

function importReport(r: ImportReport): Html {
  const count = (n: number, label: string, cls: string) =>
    html`<li class="count ${cls}${n === 0 ? ' zero' : ''}"><span class="count-n">${n}</span><span class="count-label">${label}</span></li>`;
  const title =
    r.failedCount > 0
      ? `${r.failedCount} ${r.failedCount === 1 ? 'row' : 'rows'} cannot be imported: fix ${r.failedCount === 1 ? 'it' : 'them'} and check again.`
      : r.dryRun
        ? r.created + r.updated === 0
          ? 'Every device is as the file says already: nothing to import.'
          : 'Every row is valid: import it.'
        : 'Imported.';
  return html`<section class="card import-report" id="import-report" aria-labelledby="import-h">
<h2 id="import-h">${r.dryRun ? 'Check' : 'Import'}: ${title}</h2>
<ul class="counts import-counts">${count(r.created, 'New', 'st-ok')}${count(r.updated, 'Changed', 'st-info')}${count(r.unchanged, 'Unchanged', 'st-none')}${count(r.failedCount, 'At fault', 'st-error')}</ul>
${r.failed.length > 0 ? failuresTable(r.failed, r.failedCount) : ''}
</section>`;
}

function failuresTable(failed: ImportFailure[], total: number): Html {
  return html`<div class="table-wrap"><table class="table compact import-failures">
<thead><tr><th scope="col">Line</th><th scope="col">Field</th><th scope="col">Code</th><th scope="col">Message</th></tr></thead>
<tbody>${failed.map(
    (f) =>
      html`<tr data-line="${f.line}"><td data-label="Line">${f.line}</td><td data-label="Field">${f.field === null ? html`<span class="muted">the row</span>` : html`<span class="mono">${f.field}</span>`}</td><td data-label="Code"><span class="code">${f.code}</span></td><td data-label="Message">${f.message}</td></tr>`,
  )}</tbody>
</table></div>
${total > failed.length ? html`<p class="small muted">The first ${failed.length} of ${total} rows at fault.</p>` : ''}`;
}
