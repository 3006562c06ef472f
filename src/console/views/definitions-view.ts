/**
 * Definitions: the list, and a definition's page, which is its editor: the data points and rules as
 * YAML and the parser in two editors (CodeMirror, editor-src.js; plain text areas without it), Run
 * on a payload, Replay over the recent payloads of its devices, Save as draft, Publish, and its
 * versions with Roll back. What the page offers follows the role: viewers read, operators run and
 * replay, admins change; a public definition is read only (it is the server's).
 */
import { describeDuration } from '../../domain/alarm-conditions.ts';
import { DATA_TYPE_INFO } from '../../domain/data-types.ts';
import type { DataPointSpec, ThresholdRule } from '../../domain/types.ts';
import type { DefinitionRecord, DeviceRecord } from '../../tenancy/types.ts';
import type {
  PointOutcome,
  ReplayAnswer,
  ReplayRow,
  ReplayVerdict,
  RunReport,
  TrialOutcome,
} from '../../management/definition-trials.ts';
import type { RecentPayload } from '../../recent-payloads/recent-payload-codec.ts';
import type { EditorAssetUrls } from '../assets.ts';
import { html, type Html } from '../html.ts';
import type { ConsoleSession } from '../sessions.ts';
import { paths, STATUS_LABEL, statusPill, timeAgo } from './format.ts';
import { messageWithLocation } from './ingestion-view.ts';
import { notice, pageHeader } from './layout.ts';
import { roleAllows } from '../../tenancy/types.ts';

export function definitionsBody(definitions: DefinitionRecord[], deviceCounts: Map<string, number>): Html {
  return html`${pageHeader('Definitions', 'Device types: their data points, thresholds and parser. Open one to edit it and try it on real payloads.')}
<div class="card table-card table-wrap"><table class="table">
<thead><tr><th scope="col">Definition</th><th scope="col">Scope</th><th scope="col">Data points</th><th scope="col">Devices</th><th scope="col">Updated</th></tr></thead>
<tbody>${definitions.map(
    (d) => html`<tr>
<td data-label="Definition"><a class="strong" href="${paths.definition(d.isPublic, d.spec.name)}">${d.spec.name}</a><div class="small muted">${d.spec.manufacturer} · version ${d.spec.version}</div></td>
<td data-label="Scope">${d.isPublic ? html`<span class="tag">public</span>` : 'this environment'}</td>
<td data-label="Data points">${d.spec.dataPoints.length}</td>
<td data-label="Devices">${deviceCounts.get(`${d.isPublic ? 'public' : 'private'}\n${d.spec.name}`) ?? 0}</td>
<td data-label="Updated">${d.updatedUTC ? timeAgo(Date.parse(d.updatedUTC), 0) : '—'}</td>
</tr>`,
  )}</tbody>
</table></div>
${definitions.length === 0 ? html`<p class="empty">No definitions yet: add one with vigil definition apply.</p>` : ''}`;
}

/** One version in the versions list. */
export interface VersionRow {
  version: number;
  createdUTC: string;
  createdBy: string;
  note: string;
  published: boolean;
}

/** A problem of the draft (INVALID_INPUT of /definitions/check's kind): its part and place. */
export interface DraftProblem {
  part: 'definition' | 'parser';
  code: string;
  message: string;
  line: number | null;
  column: number | null;
}

export interface EditorModel {
  /** The definition's head: its published version. */
  definition: DefinitionRecord;
  session: ConsoleSession;
  /** The stored version the editor holds; null: a draft, as posted. */
  shownVersion: number | null;
  yaml: string;
  parserSource: string;
  versions: VersionRow[];
  /** Saving, publishing and rolling back can be done here (the console has the management operations). */
  manageable: boolean;
  devices: DeviceRecord[];
  /** The device whose recent payloads are offered and whose overrides a Run applies. */
  device: string | undefined;
  /** The data points each device overrides the rules of. */
  overrides: ReadonlyMap<string, readonly string[]>;
  recent: RecentPayload[];
  payload: string;
  run?: RunReport | undefined;
  replay?: ReplayAnswer | undefined;
  problem?: DraftProblem | undefined;
  error?: string | undefined;
  /** The catalogue code of `error`. */
  errorCode?: string | undefined;
  /** What a change just did (after its redirect). */
  flash?: string | undefined;
  nowMs: number;
  assets: EditorAssetUrls;
}

/** What the session's role and the definition allow on the page. */
function allowed(m: EditorModel) {
  const run = roleAllows(m.session.role, 'write');
  const edit = run && !m.definition.isPublic;
  const manage = edit && m.manageable && roleAllows(m.session.role, 'admin');
  return { run, edit, manage };
}

export function definitionBody(m: EditorModel): Html {
  const d = m.definition;
  const action = paths.definition(d.isPublic, d.spec.name);
  const can = allowed(m);
  const latest = d.latest > d.version ? html` · newest ${d.latest} (a draft)` : '';
  return html`<nav class="crumbs" aria-label="Breadcrumb"><a href="${paths.definitions}">Definitions</a> <span aria-hidden="true">/</span> <span>${d.spec.name}</span></nav>
<link rel="stylesheet" href="${m.assets.css}">
<script type="module" src="${m.assets.js}"></script>
${pageHeader(d.spec.name, html`${d.spec.manufacturer} · published version ${d.version}${latest} · ${d.isPublic ? 'public' : 'private to this environment'} · revision ${d.revision}`)}
${m.flash ? notice('ok', m.flash) : ''}
${d.isPublic ? notice('note', html`A public definition is the server’s: it is read here and changed only with <span class="mono">vigil definition apply --public</span>.`) : ''}
${!can.run ? notice('note', 'You are signed in as a viewer: you see the definition and its parser but cannot run or change them.') : ''}
<form id="editor-form" method="post" action="${action}#result" data-check-url="${action}/check" data-editor-css="${m.assets.css}" class="editor-form">
<input type="hidden" name="_csrf" value="${m.session.csrf}">
<input type="hidden" name="revision" value="${d.revision}">
<input type="hidden" name="version" value="${m.shownVersion ?? ''}">
<div class="editor-grid">
<section class="card" aria-labelledby="yaml-h">
<h2 id="yaml-h">Data points and rules <span class="small muted">${shownLabel(m)}</span></h2>
<div class="field editor-field">
<textarea id="ed-definition" name="definition" rows="18" spellcheck="false" data-editor="yaml" aria-label="Definition (YAML)"${can.edit ? '' : html` readonly`}${errorAttributes(m, 'definition')}>${m.yaml}</textarea>
</div>
<ul id="editor-problems" class="editor-problems"${m.problem ? '' : html` hidden`}>${m.problem ? problemItem(m.problem) : ''}</ul>
<p id="editor-check-status" class="small muted check-status" role="status" aria-live="polite"></p>
</section>
<section class="card" aria-labelledby="src-h">
<h2 id="src-h">Parser <span class="mono small muted">${d.spec.name}.js</span></h2>
<div class="field editor-field">
<textarea id="ed-parser" name="parserSource" rows="18" spellcheck="false" data-editor="javascript" aria-label="Parser (JavaScript)"${can.edit ? '' : html` readonly`}${errorAttributes(m, 'parser')}>${m.parserSource}</textarea>
</div>
</section>
</div>
${can.run ? tryCard(m, can) : ''}
</form>
${answer(m)}
${versionsCard(m, action, can.manage)}
${dataPointsCard(d)}`;
}

function shownLabel(m: EditorModel): string {
  if (m.shownVersion === null) return 'draft (not saved)';
  return m.shownVersion === m.definition.version ? `version ${m.shownVersion}, published` : `version ${m.shownVersion}`;
}

/** The error line the editor marks on load: the draft's problem, or the run's parser error. */
function errorAttributes(m: EditorModel, part: 'definition' | 'parser'): Html {
  const at =
    m.problem?.part === part && m.problem.line !== null
      ? { line: m.problem.line, column: m.problem.column ?? 1, message: m.problem.message }
      : part === 'parser' && m.run && !m.run.ok && m.run.line !== undefined
        ? { line: m.run.line, column: m.run.column ?? 1, message: m.run.message }
        : undefined;
  if (!at) return html``;
  return html` data-error-line="${at.line}" data-error-column="${at.column}" data-error-message="${at.message}"`;
}

function problemItem(p: DraftProblem): Html {
  return html`<li><span class="mono">${p.part === 'parser' ? 'Parser' : 'Definition'}${p.line ? ` line ${p.line}` : ''}${p.column ? `:${p.column}` : ''}</span> <span class="mono code">${p.code}</span> ${p.message}</li>`;
}

/** The payload to run, its device, and the buttons the role may use. */
function tryCard(m: EditorModel, can: { edit: boolean; manage: boolean }): Html {
  const chosen = m.device;
  const overridden = chosen ? (m.overrides.get(chosen) ?? []) : [];
  return html`<section class="card" aria-labelledby="try-h">
<h2 id="try-h">Try it</h2>
<p class="sub">Run executes the parser above in the real sandbox with the workers’ limits and shows what Vigil would store. Replay runs it over the recent payloads of every device of this definition, each beside the published version, and shows what would change.</p>
<div class="device-pick">
<div class="field"><label for="wb-device">Device</label>
<select id="wb-device" name="device">
<option value="">No device (no payloads, the definition’s rules)</option>
${m.devices.map((x) => {
  const o = m.overrides.get(x.deviceName) ?? [];
  return html`<option value="${x.deviceName}"${x.deviceName === chosen ? html` selected` : ''}>${x.displayName} (${x.deviceName})${o.length > 0 ? ` — overrides ${o.join(', ')}` : ''}</option>`;
})}
</select></div>
<div class="field"><label for="payload-pick">Recent payload</label>
<select id="payload-pick" name="payloadId">
${m.recent.length === 0 ? html`<option value="">None kept</option>` : ''}
${m.recent.map((p) => html`<option value="${p.ingestId}" data-payload="${p.payload}">${new Date(p.receivedMs).toISOString().slice(0, 19).replace('T', ' ')} UTC · ${p.outcome}${p.payloadBytes !== undefined ? ' · shortened' : ''}</option>`)}
</select></div>
<button type="submit" name="action" value="load" class="btn">Load</button>
</div>
${overridden.length > 0 ? html`<p class="small override-note notice notice-note" id="override-note">This device overrides the definition’s rules of <span class="mono">${overridden.join(', ')}</span>: Run gives its statuses by the device’s own rules there (see the device page), and Replay too, device by device.</p>` : ''}
<div class="field"><label for="wb-payload">Payload</label>
<textarea id="wb-payload" name="payload" rows="6" spellcheck="false" class="mono">${m.payload}</textarea></div>
<div class="actions">
<button type="submit" name="action" value="run" class="btn btn-primary">Run</button>
${can.edit ? html`<button type="submit" name="action" value="replay" class="btn">Replay</button>` : ''}
</div>
${
  can.manage
    ? html`<div class="publish-row">
<div class="field"><label for="ed-note">Note <span class="muted small">(why: kept with the version and in the audit log)</span></label>
<input id="ed-note" name="note" type="text" maxlength="500" autocomplete="off"></div>
<button type="submit" name="action" value="save" class="btn">Save as draft</button>
<button type="submit" name="action" value="publish" class="btn btn-primary">Publish</button>
</div>`
    : ''
}
</section>`;
}

/** What Run or Replay answered, or why it was refused, across the page's width. */
function answer(m: EditorModel): Html {
  if (!m.error && !m.run && !m.replay && !m.problem) return html``;
  return html`<section class="card workbench-answer" id="result" aria-label="Result">
${m.error ? notice('error', m.errorCode ? html`<span class="mono code">${m.errorCode}</span> ${m.error}` : m.error) : ''}
${m.problem && !m.error ? notice('error', html`<span class="mono code">${m.problem.code}</span> ${m.problem.part === 'parser' ? 'The parser' : 'The definition'} has a problem${m.problem.line ? ` at line ${m.problem.line}` : ''}: ${m.problem.message}`) : ''}
${m.run ? runResult(m.run) : ''}
${m.replay ? replayResult(m.replay, m.nowMs) : ''}
</section>`;
}

function versionsCard(m: EditorModel, action: string, manage: boolean): Html {
  if (m.versions.length === 0) return html``;
  const published = m.definition.version;
  return html`<section class="card" aria-labelledby="versions-h">
<h2 id="versions-h">Versions</h2>
<div class="table-wrap"><table class="table compact versions">
<thead><tr><th scope="col">Version</th><th scope="col">Made</th><th scope="col">By</th><th scope="col">Note</th><th scope="col">Actions</th></tr></thead>
<tbody>${m.versions.map(
    (v) => html`<tr data-version="${v.version}"${v.published ? html` class="is-published"` : ''}>
<td data-label="Version">${v.version} ${v.published ? html`<span class="pill st-ok">Published</span>` : v.version > published ? html`<span class="tag">draft</span>` : ''}</td>
<td data-label="Made">${v.createdUTC ? timeAgo(Date.parse(v.createdUTC), m.nowMs) : '—'}</td>
<td data-label="By">${v.createdBy || '—'}</td>
<td data-label="Note">${v.note || html`<span class="muted">—</span>`}</td>
<td data-label="Actions"><a class="btn btn-ghost" href="${action}?version=${v.version}">View</a>${
      manage && !v.published
        ? html` <form method="post" action="${action}#versions-h">
<input type="hidden" name="_csrf" value="${m.session.csrf}">
<input type="hidden" name="revision" value="${m.definition.revision}">
<input type="hidden" name="version" value="${v.version}">
<input type="text" name="note" maxlength="500" placeholder="Note" aria-label="Note for version ${v.version}" autocomplete="off">
${
  v.version < published
    ? html`<button type="submit" name="action" value="rollback" class="btn">Roll back to ${v.version}</button>`
    : html`<button type="submit" name="action" value="publish-version" class="btn">Publish ${v.version}</button>`
}
</form>`
        : ''
    }</td>
</tr>`,
  )}</tbody></table></div>
</section>`;
}

function dataPointsCard(d: DefinitionRecord): Html {
  return html`<section class="card" aria-labelledby="dp-h">
<h2 id="dp-h">Data points of the published version</h2>
<div class="table-wrap"><table class="table">
<thead><tr><th scope="col">Data point</th><th scope="col">Type</th><th scope="col">Rules</th></tr></thead>
<tbody>${d.spec.dataPoints.map(
    (p) => html`<tr><td data-label="Data point"><span class="strong">${p.displayName}</span><div class="mono muted small">${p.name}</div></td>
<td data-label="Type">${p.dataType}${DATA_TYPE_INFO[p.dataType].units ? html` <span class="muted">(${DATA_TYPE_INFO[p.dataType].units.trim()})</span>` : ''}</td>
<td data-label="Rules">${rulesCell(p)}</td></tr>`,
  )}</tbody>
</table></div>
${d.spec.availability ? html`<p class="small muted">No contact for ${d.spec.availability.timeoutMinutes ?? 'the default'} minutes: ${STATUS_LABEL[d.spec.availability.status ?? 'ERROR']}.</p>` : ''}
</section>`;
}

/** A data point's rules, each with how long it must hold (`for`), then its stale rule and hysteresis. */
function rulesCell(p: DataPointSpec): Html {
  if (p.thresholds.length === 0 && !p.stale) return html`<span class="muted">none</span>`;
  return html`<ul class="rules">${p.thresholds.map((r) => html`<li>${statusPill(r.status)} ${ruleText(r)}</li>`)}${
    p.stale
      ? html`<li title="No value for this long while the device still sends payloads">${statusPill(p.stale.status)} no value for ${describeDuration(p.stale.afterMs)}</li>`
      : ''
  }</ul>${p.hysteresis ? html`<div class="small muted">hysteresis ${p.hysteresis}</div>` : ''}`;
}

/** `above 25`, `equals true for 2 min — Door open too long`: the condition, how long it must hold, its description. */
function ruleText(r: ThresholdRule): string {
  const cond =
    r.above !== undefined ? `above ${r.above}` : r.below !== undefined ? `below ${r.below}` : `equals ${JSON.stringify(r.equals)}`;
  const held = r.forMs ? `${cond} for ${describeDuration(r.forMs)}` : cond;
  return r.description ? `${held} — ${r.description}` : held;
}

function runResult(r: RunReport): Html {
  const logs = r.logs.length > 0 ? html`<h3>Console output</h3><pre class="logs">${r.logs.join('\n')}</pre>` : '';
  if (!r.ok) {
    return html`<div class="result result-error" role="status" aria-live="polite" id="run-result">
<h3>The parser failed${r.line !== undefined ? ` at line ${r.line}` : ''}</h3>
<p><span class="mono code">${r.code}</span> ${messageWithLocation(r.message)}</p>${logs}</div>`;
  }
  return html`<div class="result" role="status" aria-live="polite" id="run-result">
<h3>What Vigil would store</h3>
<div class="table-wrap"><table class="table compact">
<thead><tr><th scope="col">Data point</th><th scope="col">Parser returned</th><th scope="col">Converted</th><th scope="col">Current value</th><th scope="col">Status</th></tr></thead>
<tbody>${r.dataPoints.map(
    (p) => html`<tr data-sensor="${p.sensorName}">
<td data-label="Data point" class="mono">${p.sensorName}</td>
<td data-label="Parser returned" class="mono">${p.parsed === undefined ? html`<span class="muted">not returned</span>` : JSON.stringify(p.parsed)}</td>
<td data-label="Converted" class="mono">${p.conversionError ? html`<span class="err">dropped: ${p.conversionError}</span>` : p.rawValue === null ? '—' : JSON.stringify(p.rawValue)}</td>
<td data-label="Current value" class="value">${p.currentValue ?? '—'}</td>
<td data-label="Status">${p.currentStatus ? html`${statusPill(p.currentStatus)}${p.reason ? html` <span class="small">${p.reason}</span>` : ''}` : '—'}${(p.waiting ?? []).map((w) => html`<div class="small pending">pending: ${statusPill(w.status)} ${w.reason}, if the value holds</div>`)}</td>
</tr>`,
  )}</tbody></table></div>
${r.unknownKeys.length > 0 ? html`<p class="small">Ignored (not data points of this definition): <span class="mono">${r.unknownKeys.join(', ')}</span></p>` : ''}
${logs}</div>`;
}

const VERDICT: Record<ReplayVerdict, { label: string; cls: string }> = {
  fails: { label: 'Would now fail', cls: 'st-error' },
  succeeds: { label: 'Would now succeed', cls: 'st-ok' },
  status: { label: 'Status changes', cls: 'st-warning' },
  value: { label: 'Value changes', cls: 'st-info' },
  same: { label: 'Same', cls: 'st-none' },
};

/** Rows of payloads that stay the same shown at most (the count says how many there are). */
const SAME_SHOWN = 20;

function replayResult(r: ReplayAnswer, nowMs: number): Html {
  const differ = r.counts.fails + r.counts.succeeds + r.counts.status + r.counts.value;
  const same = r.rows.filter((x) => x.verdict === 'same');
  const rows = [...r.rows.filter((x) => x.verdict !== 'same'), ...same.slice(0, SAME_SHOWN)];
  return html`<div class="result" role="status" aria-live="polite" id="replay-result">
<h3>Replay of ${r.replayed} recent ${r.replayed === 1 ? 'payload' : 'payloads'} of ${r.devicesReplayed} ${r.devicesReplayed === 1 ? 'device' : 'devices'} beside published version ${r.published}: ${differ === 0 ? 'nothing would change' : `${differ} would change`}</h3>
<div class="replay-counts">${(Object.keys(VERDICT) as ReplayVerdict[]).map(
    (v) => html`<span class="pill ${VERDICT[v].cls}" data-count="${v}">${VERDICT[v].label}: ${r.counts[v]}</span>`,
  )}</div>
${r.skipped > 0 ? html`<p class="small muted">${r.skipped} shortened when kept: not replayed.</p>` : ''}
${r.replayed === 0 ? html`<p class="empty">No payloads of this definition’s devices are kept.</p>` : ''}
<div class="replay-rows">${rows.map(
    (row) => html`<details class="replay-${row.verdict}" data-verdict="${row.verdict}">
<summary><span class="pill ${VERDICT[row.verdict].cls}">${VERDICT[row.verdict].label}</span> <span class="mono small">${row.deviceName}</span> <span class="small muted">${timeAgo(Date.parse(row.receivedUTC), nowMs)}</span> <span class="small">${changeLine(row)}</span></summary>
<div class="then-now">
<div><h4>Then: published version ${r.published}</h4>${outcomeBlock(row.then)}</div>
<div><h4>Now: the draft</h4>${outcomeBlock(row.now)}</div>
</div>
<h4 class="small muted">Payload</h4>
<pre class="payload">${row.payload.length > 2000 ? `${row.payload.slice(0, 2000)}…` : row.payload}</pre>
</details>`,
  )}</div>
${same.length > SAME_SHOWN ? html`<p class="small muted">And ${same.length - SAME_SHOWN} more that stay the same.</p>` : ''}
</div>`;
}

/** A row's summary line: what changes. */
function changeLine(row: ReplayRow): Html {
  if (!row.now.ok) return html`<span class="mono">${row.now.code}</span> ${row.now.message}`;
  if (!row.then.ok) return html`was <span class="mono">${row.then.code}</span>`;
  return html`${row.changes.map(
    (c, i) => html`${i > 0 ? '; ' : ''}<span class="mono">${c.sensorName}</span> ${pointText(c.then)} → ${pointText(c.now)}`,
  )}`;
}

const pointText = (p: PointOutcome | null) =>
  p ? `${p.currentValue ?? JSON.stringify(p.value)}${p.status && p.status !== 'SUCCESS' ? ` (${STATUS_LABEL[p.status]})` : ''}` : 'none';

function outcomeBlock(o: TrialOutcome): Html {
  if (!o.ok) return html`<p class="small err"><span class="mono code">${o.code}</span> ${messageWithLocation(o.message)}</p>`;
  const points = Object.entries(o.dataPoints);
  if (points.length === 0) return html`<p class="small muted">No data points.</p>`;
  return html`<ul class="changes">${points.map(
    ([name, p]) => html`<li><span class="mono">${name}</span>: ${p.currentValue ?? JSON.stringify(p.value)} ${p.status ? statusPill(p.status) : ''}</li>`,
  )}</ul>`;
}
