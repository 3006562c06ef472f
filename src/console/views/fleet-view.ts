/** The fleet page: counts per status, a search box, and every device with its status. */
import { STATUSES, type Status } from '../../domain/types.ts';
import type { FleetDevice, FleetSnapshot } from '../fleet-data.ts';
import { html, type Html } from '../html.ts';
import { pageHeader } from './layout.ts';
import { paths, query, silentPill, STATUS_LABEL, statusClass, statusPill, timeAgo } from './format.ts';
import { rowsHtml, type Region, type Row } from './regions.ts';

/** A filter of the fleet: a status (or SILENT, NO_DATA) and a search text. */
export interface FleetFilter {
  status?: Status | 'SILENT' | 'NO_DATA' | undefined;
  q?: string | undefined;
}

export const FLEET_FILTERS = [...STATUSES, 'SILENT', 'NO_DATA'] as const;

export function parseFleetFilter(params: URLSearchParams): FleetFilter {
  const status = params.get('status') ?? '';
  const q = (params.get('q') ?? '').trim().slice(0, 200);
  return {
    status: (FLEET_FILTERS as readonly string[]).includes(status) ? (status as FleetFilter['status']) : undefined,
    q: q === '' ? undefined : q,
  };
}

export function fleetBody(fleet: FleetSnapshot, filter: FleetFilter, nowMs: number): Html {
  const regions = fleetRegions(fleet, filter, nowMs);
  const total = fleet.devices.length;
  return html`${pageHeader('Fleet', html`<span id="fleet-total">${total} ${total === 1 ? 'device' : 'devices'}</span> in ${fleet.env}`)}
<section aria-label="Devices per status" id="fleet-summary">${summary(fleet, filter)}</section>
<form class="toolbar" method="get" action="${paths.fleet}" role="search">
<label for="fleet-q">Search devices</label>
<input id="fleet-q" name="q" type="search" value="${filter.q ?? ''}" placeholder="Name, device name or definition" autocomplete="off" data-filter-rows="fleet-rows">
${filter.status ? html`<input type="hidden" name="status" value="${filter.status}">` : ''}
<button type="submit" class="btn">Search</button>
</form>
<div class="card table-card table-wrap">
<table class="table fleet">
<caption class="visually-hidden">Devices, most severe status first</caption>
<thead><tr><th scope="col">Status</th><th scope="col">Device</th><th scope="col">Needs attention</th><th scope="col">Definition</th><th scope="col">Last contact</th></tr></thead>
<tbody id="fleet-rows" data-rows>${rowsHtml(rowsOf(regions))}</tbody>
</table>
</div>
<p class="empty" id="fleet-empty"${fleetRows(fleet, filter, nowMs).length > 0 ? html` hidden` : ''}>${total === 0 ? 'This environment has no devices yet: create them with vigil device create.' : 'No device matches.'}</p>`;
}

export function fleetRegions(fleet: FleetSnapshot, filter: FleetFilter, nowMs: number): Region[] {
  return [
    { id: 'fleet-summary', html: summary(fleet, filter) },
    { id: 'fleet-rows', rows: fleetRows(fleet, filter, nowMs) },
  ];
}

function rowsOf(regions: Region[]): Row[] {
  const r = regions.find((x) => x.id === 'fleet-rows');
  return r && 'rows' in r ? r.rows : [];
}

const SUMMARY: { key: NonNullable<FleetFilter['status']>; label: string }[] = [
  { key: 'CRITICAL', label: STATUS_LABEL.CRITICAL },
  { key: 'ERROR', label: STATUS_LABEL.ERROR },
  { key: 'WARNING', label: STATUS_LABEL.WARNING },
  { key: 'INFO', label: STATUS_LABEL.INFO },
  { key: 'SUCCESS', label: STATUS_LABEL.SUCCESS },
  { key: 'SILENT', label: 'Silent' },
  { key: 'NO_DATA', label: 'No data' },
];

function summary(fleet: FleetSnapshot, filter: FleetFilter): Html {
  const cls = (k: string) => (k === 'SILENT' ? 'st-silent' : k === 'NO_DATA' ? 'st-none' : statusClass(k as Status));
  return html`<ul class="counts">
${SUMMARY.map(({ key, label }) => {
  const n = fleet.counts[key];
  const current = filter.status === key;
  const href = paths.fleet + query({ status: current ? undefined : key, q: filter.q });
  return html`<li><a class="count ${cls(key)}${n === 0 ? ' zero' : ''}" href="${href}"${current ? html` aria-current="true"` : ''}><span class="count-n">${n}</span><span class="count-label">${label}</span></a></li>`;
})}
</ul>`;
}

function matches(d: FleetDevice, filter: FleetFilter): boolean {
  if (filter.status === 'SILENT' && !d.silent) return false;
  if (filter.status === 'NO_DATA' && d.status !== null) return false;
  if (filter.status !== undefined && filter.status !== 'SILENT' && filter.status !== 'NO_DATA' && d.status !== filter.status)
    return false;
  if (filter.q !== undefined && !searchText(d).includes(filter.q.toLowerCase())) return false;
  return true;
}

const searchText = (d: FleetDevice) => `${d.displayName}\n${d.deviceName}\n${d.definitionName}`.toLowerCase();

function fleetRows(fleet: FleetSnapshot, filter: FleetFilter, nowMs: number): Row[] {
  return fleet.devices.filter((d) => matches(d, filter)).map((d) => ({ key: d.deviceName, html: row(d, nowMs) }));
}

function row(d: FleetDevice, nowMs: number): Html {
  const shown = d.problems.filter((p) => !p.suppressed).slice(0, 3);
  const more = d.problems.filter((p) => !p.suppressed).length - shown.length;
  return html`<tr data-key="${d.deviceName}" data-search="${searchText(d)}" class="${d.silent ? 'is-silent' : ''}">
<td data-label="Status"><span class="stack">${statusPill(d.status)}${d.silent ? silentPill() : ''}</span></td>
<td data-label="Device"><a class="strong" href="${paths.device(d.deviceName)}">${d.displayName}</a><div class="mono muted small">${d.deviceName}</div></td>
<td data-label="Needs attention">${
    shown.length === 0 && !d.silent
      ? html`<span class="muted">—</span>`
      : html`<ul class="issues">${d.silent ? html`<li class="issue ${statusClass(d.silentStatus)}">No contact</li>` : ''}${shown.map(
          (p) => html`<li class="issue ${statusClass(p.status)}">${p.displayName}${p.value !== null ? html` <b>${p.value}</b>` : ''}</li>`,
        )}${more > 0 ? html`<li class="issue more">+${more} more</li>` : ''}</ul>`
  }</td>
<td data-label="Definition">${d.definitionName}${d.definitionIsPublic ? html` <span class="tag">public</span>` : ''}</td>
<td data-label="Last contact">${timeAgo(d.lastContactMs, nowMs)}</td>
</tr>`;
}
