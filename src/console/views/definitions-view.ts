/**
 * Definitions: the list, and a definition's page with its data points and rules, its parser source
 * (with line numbers) and the parser workbench: Run on a payload, Replay a device's recent payloads.
 */
import { describeDuration } from '../../domain/alarm-conditions.ts';
import { DATA_TYPE_INFO } from '../../domain/data-types.ts';
import type { DataPointSpec, ThresholdRule } from '../../domain/types.ts';
import type { DefinitionRecord, DeviceRecord } from '../../tenancy/types.ts';
import type { DefinitionTestReport } from '../../worker/definition-trial.ts';
import { html, type Html } from '../html.ts';
import type { ConsoleSession } from '../sessions.ts';
import type { ReplayRow } from '../workbench.ts';
import { outcomePill } from './device-view.ts';
import { paths, STATUS_LABEL, statusPill, timeAgo } from './format.ts';
import { messageWithLocation } from './ingestion-view.ts';
import { notice, pageHeader } from './layout.ts';
import { roleAllows } from '../../tenancy/types.ts';

export function definitionsBody(definitions: DefinitionRecord[], deviceCounts: Map<string, number>): Html {
  return html`${pageHeader('Definitions', 'Device types: their data points, thresholds and parser. Open one to try its parser on real payloads.')}
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

export interface WorkbenchModel {
  definition: DefinitionRecord;
  devices: DeviceRecord[];
  session: ConsoleSession;
  /** The device whose payloads fill the box and are replayed. */
  device: string | undefined;
  payload: string;
  /** The result of Run, when the page answers one. */
  run?: DefinitionTestReport | undefined;
  replay?: ReplayRow[] | undefined;
  error?: string | undefined;
  /** The catalogue code of `error`, when a run was refused (FORBIDDEN, RATE_LIMITED, WORKBENCH_BUSY). */
  errorCode?: string | undefined;
  nowMs: number;
}

export function definitionBody(m: WorkbenchModel): Html {
  const d = m.definition;
  const action = paths.definition(d.isPublic, d.spec.name);
  const location = m.run && !m.run.ok ? errorLocation(m.run.message, `${d.spec.name}.js`) : undefined;
  return html`<nav class="crumbs" aria-label="Breadcrumb"><a href="${paths.definitions}">Definitions</a> <span aria-hidden="true">/</span> <span>${d.spec.name}</span></nav>
${pageHeader(d.spec.name, html`${d.spec.manufacturer} · version ${d.spec.version} · ${d.isPublic ? 'public' : 'private to this environment'} · revision ${d.revision}`)}
<section class="card" aria-labelledby="dp-h">
<h2 id="dp-h">Data points</h2>
<div class="table-wrap"><table class="table">
<thead><tr><th scope="col">Data point</th><th scope="col">Type</th><th scope="col">Rules</th></tr></thead>
<tbody>${d.spec.dataPoints.map(
    (p) => html`<tr><td data-label="Data point"><span class="strong">${p.displayName}</span><div class="mono muted small">${p.name}</div></td>
<td data-label="Type">${p.dataType}${DATA_TYPE_INFO[p.dataType].units ? html` <span class="muted">(${DATA_TYPE_INFO[p.dataType].units.trim()})</span>` : ''}</td>
<td data-label="Rules">${rulesCell(p)}</td></tr>`,
  )}</tbody>
</table></div>
${d.spec.availability ? html`<p class="small muted">No contact for ${d.spec.availability.timeoutMinutes ?? 'the default'} minutes: ${STATUS_LABEL[d.spec.availability.status ?? 'ERROR']}.</p>` : ''}
</section>
<div class="workbench">
<section class="card source-card" aria-labelledby="src-h">
<h2 id="src-h">Parser <span class="mono small muted">${d.spec.name}.js</span></h2>
<p class="sub">Read-only here: change it with vigil definition apply.</p>
${sourceListing(d.parserSource, location, m.run && !m.run.ok ? m.run.message : undefined)}
</section>
<section class="card" aria-labelledby="wb-h">
<h2 id="wb-h">Workbench</h2>
<p class="sub">Runs this parser in the real sandbox, with the workers’ limits, and shows what Vigil would store.</p>
<form method="get" action="${action}" class="device-pick">
<div class="field"><label for="wb-device">Device</label>
<select id="wb-device" name="device" data-autosubmit>
<option value="">No device (no payloads)</option>
${m.devices.map((x) => html`<option value="${x.deviceName}"${x.deviceName === m.device ? html` selected` : ''}>${x.displayName} (${x.deviceName})</option>`)}
</select></div>
<button type="submit" class="btn">Load its last payload</button>
</form>
${roleAllows(m.session.role, 'write') ? runForm(m, action) : viewerPayload(m)}
</section>
${workbenchAnswer(m)}
</div>`;
}

/**
 * What Run or Replay answered, below the parser and the payload, across the page's width: the
 * result's five columns do not fit beside the source.
 */
function workbenchAnswer(m: WorkbenchModel): Html {
  if (!m.error && !m.run && !m.replay) return html``;
  return html`<section class="card workbench-answer" id="workbench-answer" aria-label="Result">
${m.error ? notice('error', m.errorCode ? html`<span class="mono code">${m.errorCode}</span> ${m.error}` : m.error) : ''}
${m.run ? runResult(m.run) : ''}
${m.replay ? replayResult(m.replay, m.nowMs) : ''}
</section>`;
}

/** The payload box with Run and Replay, for operators. */
function runForm(m: WorkbenchModel, action: string): Html {
  return html`<form method="post" action="${action}#workbench-answer" class="run-form">
<input type="hidden" name="_csrf" value="${m.session.csrf}">
<input type="hidden" name="device" value="${m.device ?? ''}">
<div class="field"><label for="wb-payload">Payload</label>
<textarea id="wb-payload" name="payload" rows="8" spellcheck="false" class="mono">${m.payload}</textarea></div>
<div class="actions">
<button type="submit" name="action" value="run" class="btn btn-primary">Run</button>
<button type="submit" name="action" value="replay" class="btn"${m.device ? '' : html` disabled title="Choose a device first"`}>Replay recent payloads</button>
</div>
</form>`;
}

/** The payload to read, without Run or Replay: a viewer's role may not run parsers. */
function viewerPayload(m: WorkbenchModel): Html {
  return html`${notice('note', 'You are signed in as a viewer: you see the parser and its payloads but cannot run it.')}
<div class="field"><label for="wb-payload">Payload</label>
<textarea id="wb-payload" rows="8" spellcheck="false" class="mono" readonly>${m.payload}</textarea></div>`;
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

/** The line and column of a parser error in `filename`, when its message names them. */
export function errorLocation(message: string, filename: string): { line: number; column: number } | undefined {
  const at = message.lastIndexOf(`(at ${filename}:`);
  if (at < 0) return undefined;
  const m = /^(\d+):(\d+)\)/.exec(message.slice(at + filename.length + 5));
  return m ? { line: Number(m[1]), column: Number(m[2]) } : undefined;
}

function sourceListing(source: string, at: { line: number; column: number } | undefined, message: string | undefined): Html {
  const lines = source.split('\n');
  return html`<pre class="source" tabindex="0" aria-label="Parser source"><code>${lines.map((text, i) => {
    const n = i + 1;
    const isError = at?.line === n;
    const line = html`<span class="line${isError ? ' line-error' : ''}" id="L${n}"${isError ? html` aria-current="true"` : ''}><span class="ln" aria-hidden="true">${n}</span>${text}\n</span>`;
    if (!isError) return line;
    const caret = `${' '.repeat(Math.max(0, (at?.column ?? 1) - 1))}^ `;
    return html`${line}<span class="line-marker" role="note"><span class="ln" aria-hidden="true"></span>${caret}${message ?? ''}\n</span>`;
  })}</code></pre>`;
}

function runResult(r: DefinitionTestReport): Html {
  const logs = r.logs.length > 0 ? html`<h3>Console output</h3><pre class="logs">${r.logs.join('\n')}</pre>` : '';
  if (!r.ok) {
    return html`<div class="result result-error" role="status" aria-live="polite" id="run-result">
<h3>The parser failed</h3>
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

const VERDICT: Record<ReplayRow['verdict'], { label: string; cls: string }> = {
  fails: { label: 'Would fail', cls: 'st-error' },
  recovers: { label: 'Would now succeed', cls: 'st-ok' },
  changes: { label: 'Status changes', cls: 'st-warning' },
  same: { label: 'Same', cls: 'st-none' },
  skipped: { label: 'Not replayed (shortened)', cls: 'st-none' },
};

function replayResult(rows: ReplayRow[], nowMs: number): Html {
  const differ = rows.filter((r) => r.verdict === 'fails' || r.verdict === 'changes' || r.verdict === 'recovers').length;
  return html`<div class="result" role="status" aria-live="polite" id="replay-result">
<h3>Replay of ${rows.length} recent ${rows.length === 1 ? 'payload' : 'payloads'}: ${differ === 0 ? 'nothing would change' : `${differ} would change`}</h3>
${rows.length === 0 ? html`<p class="empty">This device has no payloads kept.</p>` : ''}
<ul class="replay">${rows.map(
    (r) => html`<li class="replay-${r.verdict}">
<div class="payload-head"><span class="pill ${VERDICT[r.verdict].cls}">${VERDICT[r.verdict].label}</span> <span class="small muted">${timeAgo(r.payload.receivedMs, nowMs)} · then ${outcomePill(r.payload.outcome)}</span></div>
${r.now && !r.now.ok ? html`<p class="small msg"><span class="mono">${r.now.code}</span> ${messageWithLocation(r.now.message)}</p>` : ''}
${r.changes.length > 0 ? html`<ul class="changes">${r.changes.map((c) => html`<li><span class="mono">${c.sensorName}</span>: ${c.then ? statusPill(c.then) : html`<span class="muted">none</span>`} → ${c.now ? statusPill(c.now) : html`<span class="muted">none</span>`}</li>`)}</ul>` : ''}
<pre class="payload">${r.payload.payload.length > 400 ? `${r.payload.payload.slice(0, 400)}…` : r.payload.payload}</pre>
</li>`,
  )}</ul></div>`;
}
