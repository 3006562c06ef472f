/**
 * A device's page: its status and last contact, data points, the rules that set their statuses
 * (the device's overrides or its definition's), charts of the last 24 hours, events and recent
 * payloads; for admins, links to edit and delete it.
 */
import type { PointChart } from '../device-charts.ts';
import type { DeviceView } from '../device-data.ts';
import { html, jsonInHtml, type Html } from '../html.ts';
import { alarmRows } from './alarms-view.ts';
import type { ConsoleSession } from '../sessions.ts';
import { eventRows } from './events-view.ts';
import { paths, query, silentPill, STATUS_LABEL, statusPill, timeAgo } from './format.ts';
import { notice } from './layout.ts';
import { keyedRow, rowsHtml, type Region, type Row } from './regions.ts';

export interface DeviceModel {
  view: DeviceView;
  charts: PointChart[];
  session: ConsoleSession;
  nowMs: number;
}

/** What the page shows besides its live regions: the rules section, and an admin's actions. */
export interface DeviceExtras {
  rules?: Html | undefined;
  actions?: Html | undefined;
}

export function deviceBody(m: DeviceModel, flash?: Html, extras: DeviceExtras = {}): Html {
  const { view } = m;
  const d = view.device;
  const charted = view.points.filter((p) => p.chart !== null);
  const regions = deviceRegions(m);
  const region = (id: string) => regions.find((r) => r.id === id);
  const blockOf = (id: string) => {
    const r = region(id);
    return r && 'html' in r ? r.html : html``;
  };
  const rowsOf = (id: string): Row[] => {
    const r = region(id);
    return r && 'rows' in r ? r.rows : [];
  };
  return html`<nav class="crumbs" aria-label="Breadcrumb"><a href="${paths.fleet}">Fleet</a> <span aria-hidden="true">/</span> <span>${d.displayName}</span></nav>
<div id="device-head">${blockOf('device-head')}</div>
${extras.actions ?? ''}
${flash ?? ''}
<section class="card" aria-labelledby="alarms-h">
<h2 id="alarms-h">Open alarms</h2>
<div class="table-wrap"><table class="table alarms">
<thead><tr><th scope="col">Status</th><th scope="col">Alarm</th><th scope="col">Since</th><th scope="col">Acknowledgement</th></tr></thead>
<tbody id="device-alarms" data-rows>${rowsHtml(rowsOf('device-alarms'))}</tbody>
</table></div>
<p class="empty" data-empty-for="device-alarms"${view.alarms.length > 0 ? html` hidden` : ''}>No open alarms.</p>
</section>
<section class="card" aria-labelledby="points-h">
<h2 id="points-h">Data points</h2>
<div class="table-wrap"><table class="table points">
<thead><tr><th scope="col">Data point</th><th scope="col">Current value</th><th scope="col">Status</th><th scope="col">Updated</th></tr></thead>
<tbody id="device-points" data-rows>${rowsHtml(rowsOf('device-points'))}</tbody>
</table></div>
</section>
${extras.rules ?? ''}
${charted.length > 0 ? chartsSection(charted, m.charts) : ''}
<div class="two-col">
<section class="card" aria-labelledby="events-h">
<h2 id="events-h">Events</h2>
<div class="table-wrap"><table class="table events compact">
<thead><tr><th scope="col">When</th><th scope="col">Status</th><th scope="col">Message</th></tr></thead>
<tbody id="device-events" data-rows>${rowsHtml(rowsOf('device-events'))}</tbody>
</table></div>
<p><a href="${paths.events + query({ device: d.deviceName })}">All events of this device</a></p>
</section>
<section class="card" aria-labelledby="payloads-h">
<h2 id="payloads-h">Recent payloads</h2>
<ul class="payloads" id="device-payloads" data-rows>${rowsHtml(rowsOf('device-payloads'))}</ul>
<p class="empty" data-empty-for="device-payloads"${view.payloads.length > 0 ? html` hidden` : ''}>No payload kept yet.</p>
</section>
</div>`;
}

export function deviceRegions(m: DeviceModel): Region[] {
  const { view, nowMs } = m;
  return [
    { id: 'device-head', html: head(view, nowMs) },
    { id: 'device-alarms', rows: alarmRows(view.alarms, m.session, nowMs, false, paths.device(view.device.deviceName)) },
    { id: 'device-points', rows: view.points.map((p) => keyedRow(p.sensorName, (key) => pointRow(p, key, nowMs))) },
    { id: 'device-events', rows: eventRows(view.events, nowMs, false) },
    {
      id: 'device-payloads',
      rows: view.payloads.map((p) => keyedRow(p.ingestId, (key) => payloadItem(view, p, key, nowMs))),
    },
    { id: 'chart-data', data: m.charts },
  ];
}

function head(view: DeviceView, nowMs: number): Html {
  const d = view.device;
  return html`<div class="page-head device-head">
<div>
<h1>${d.displayName}</h1>
<p class="sub"><span class="mono">${d.deviceName}</span> · <a href="${paths.definition(d.definitionIsPublic, d.definitionName) + query({ device: d.deviceName })}">${d.definitionName}</a>${d.definitionIsPublic ? ' (public)' : ''}</p>
</div>
<dl class="facts">
<div><dt>Status</dt><dd><span class="stack">${statusPill(view.status)}${view.silent ? silentPill() : ''}</span></dd></div>
<div><dt>Last contact</dt><dd>${timeAgo(view.lastContactMs, nowMs)}</dd></div>
</dl>
</div>
${view.spec ? '' : notice('error', 'The definition of this device does not exist any more.')}`;
}

/**
 * The charts of the data points that have one. They share one time axis, which charts.js fits to
 * the history there is (at most 24 hours) and says how much that is.
 */
function chartsSection(points: DeviceView['points'], charts: PointChart[]): Html {
  return html`<section class="card" aria-labelledby="charts-h">
<h2 id="charts-h">History</h2>
<p class="sub">The last 24 hours, or as much as there is: hourly minimum to maximum (band) and average (line) with every value of the last 3 hours (dots); a yes/no data point’s values as steps.</p>
<p class="small muted chart-span" id="chart-span"></p>
<div class="charts">${points.map(
    (p) =>
      html`<figure class="chart chart-${p.chart ?? 'band'}"><figcaption>${p.displayName}</figcaption><div class="chart-canvas" data-sensor="${p.sensorName}" role="img" aria-label="Chart of ${p.displayName}, up to the last 24 hours"></div></figure>`,
  )}</div>
<script type="application/json" id="chart-data">${jsonInHtml(charts)}</script>
</section>`;
}

function pointRow(p: DeviceView['points'][number], key: Html, nowMs: number): Html {
  const hasValue = p.updatedMs !== null;
  return html`<tr${key}>
<td data-label="Data point"><span class="strong">${p.displayName}</span><div class="mono muted small">${p.sensorName}</div></td>
<td data-label="Current value" class="value">${p.value ?? html`<span class="muted">No value yet</span>`}</td>
<td data-label="Status">${
    hasValue
      ? html`<span class="stack">${statusPill(p.status)}${p.suppressed ? html`<span class="tag" title="No events while suppressed">suppressed</span>` : ''}${p.stale ? html`<span class="tag" title="Its stale rule: no value for a while">no value</span>` : ''}</span>${
          p.sinceMs !== null ? html`<div class="small muted">since ${timeAgo(p.sinceMs, nowMs)}</div>` : ''
        }${
          p.pending
            ? html`<div class="small pending" title="${p.pending.text}">${STATUS_LABEL[p.pending.status]} pending since ${timeAgo(p.pending.sinceMs, nowMs)}, due ${timeAgo(p.pending.sinceMs + p.pending.forMs, nowMs)}</div>`
            : ''
        }`
      : html`<span class="muted">—</span>`
  }</td>
<td data-label="Updated">${timeAgo(p.updatedMs, nowMs, '—')}</td>
</tr>`;
}

function payloadItem(view: DeviceView, p: DeviceView['payloads'][number], key: Html, nowMs: number): Html {
  const d = view.device;
  const workbench =
    paths.definition(d.definitionIsPublic, d.definitionName) + query({ device: d.deviceName, payload: p.ingestId });
  return html`<li${key}>
<div class="payload-head">${outcomePill(p.outcome)}${p.code ? html` <span class="mono small">${p.code}</span>` : ''} <span class="muted small">${timeAgo(p.receivedMs, nowMs)}</span> <a class="small" href="${workbench}">Open in workbench</a></div>
${p.message ? html`<p class="small msg">${p.message}</p>` : ''}
<pre class="payload">${p.payload}</pre>
${p.payloadBytes !== undefined ? html`<p class="small muted">Shortened: the payload had ${p.payloadBytes} bytes.</p>` : ''}
</li>`;
}

const OUTCOME_PILLS = {
  accepted: { cls: 'st-ok', label: 'Accepted' },
  partial: { cls: 'st-warning', label: 'Partly accepted' },
  rejected: { cls: 'st-error', label: 'Rejected' },
  ignored: { cls: 'st-none', label: 'Ignored' },
} as const;

export function outcomePill(outcome: keyof typeof OUTCOME_PILLS): Html {
  const { cls, label } = OUTCOME_PILLS[outcome];
  return html`<span class="pill ${cls}">${label}</span>`;
}
