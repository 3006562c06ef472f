/**
 * The fleet page: counts per status, a search box, a filter by labels, and every device with its
 * status and labels; for admins, links to create and import devices.
 */
import { STATUSES, type Status } from '../../domain/types.ts';
import type { FleetDevice, FleetSnapshot } from '../fleet-data.ts';
import { html, raw, type Html } from '../html.ts';
import { pageHeader } from './layout.ts';
import { hasLabels, labelFilterOf, labelFilterText, labelTags } from './label-filter.ts';
import { paths, query, silentPill, STATUS_LABEL, statusClass, statusPill, timeAgo } from './format.ts';
import type { Region, Row } from './regions.ts';

/**
 * A filter of the fleet: a status (or SILENT, NO_DATA), a search text, labels the devices must have,
 * and whether to list all rows.
 */
export interface FleetFilter {
  status?: Status | 'SILENT' | 'NO_DATA' | undefined;
  q?: string | undefined;
  /** Every one of these labels (`labels=site=amsterdam;floor=2`). */
  labels?: Readonly<Record<string, string>> | undefined;
  /** Every matching device, not only the FLEET_ROWS most severe. */
  all?: boolean | undefined;
}

/**
 * Devices listed at most unless all are asked for (the most severe first, so the ones that need
 * attention are always there): a large fleet's page stays small for the browser and cheap for the
 * server, which renders and compresses it for every client. Search and the status filters cover
 * every device.
 */
export const FLEET_ROWS = 200;

export const FLEET_FILTERS = [...STATUSES, 'SILENT', 'NO_DATA'] as const;

export function parseFleetFilter(params: URLSearchParams): FleetFilter {
  const status = params.get('status') ?? '';
  const q = (params.get('q') ?? '').trim().slice(0, 200);
  return {
    status: (FLEET_FILTERS as readonly string[]).includes(status) ? (status as FleetFilter['status']) : undefined,
    q: q === '' ? undefined : q,
    labels: labelFilterOf(params),
    all: params.get('all') === '1' ? true : undefined,
  };
}

/** The query parameters of a filter (for links and the live stream). */
export const fleetParams = (filter: FleetFilter): Record<string, string | undefined> => ({
  status: filter.status,
  q: filter.q,
  labels: labelFilterText(filter.labels),
  all: filter.all ? '1' : undefined,
});

export function fleetBody(fleet: FleetSnapshot, filter: FleetFilter, nowMs: number, admin = false): Html {
  const regions = fleetRegions(fleet, filter, nowMs);
  const rows = rowsOf(regions);
  const total = fleet.devices.length;
  const matching = matchingCount(fleet, filter);
  const actions = admin
    ? html`<div class="page-actions"><a class="btn btn-primary" href="${paths.newDevice}">New device</a><a class="btn" href="${paths.importDevices}">Import CSV</a></div>`
    : undefined;
  return html`${pageHeader('Fleet', html`<span id="fleet-total">${total} ${total === 1 ? 'device' : 'devices'}</span> in ${fleet.env}`, actions)}
<section aria-label="Devices per status" id="fleet-summary">${summary(fleet, filter)}</section>
<form class="toolbar" method="get" action="${paths.fleet}" role="search">
<label for="fleet-q">Search devices</label>
<input id="fleet-q" name="q" type="search" value="${filter.q ?? ''}" placeholder="Name, device name, definition or label" autocomplete="off" data-filter-rows="fleet-rows">
<label for="fleet-labels">Labels</label>
<input id="fleet-labels" name="labels" type="search" class="labels-input" value="${labelFilterText(filter.labels) ?? ''}" placeholder="site=amsterdam" autocomplete="off">
${filter.status ? html`<input type="hidden" name="status" value="${filter.status}">` : ''}
<button type="submit" class="btn">Search</button>
${filter.labels ? html`<a class="btn btn-ghost" href="${paths.fleet + query({ status: filter.status, q: filter.q })}">All labels</a>` : ''}
</form>
<div class="card table-card table-wrap">
<table class="table fleet">
<caption class="visually-hidden">Devices, most severe status first</caption>
<thead><tr><th scope="col">Status</th><th scope="col">Device</th><th scope="col">Needs attention</th><th scope="col">Definition</th><th scope="col">Labels</th><th scope="col">Last contact</th></tr></thead>
<tbody id="fleet-rows" data-rows>${joinedRows(rows)}</tbody>
</table>
</div>
<p class="empty" id="fleet-empty"${rows.length > 0 ? html` hidden` : ''}>${total === 0 ? (admin ? 'This environment has no devices yet: create one (New device) or import a CSV file.' : 'This environment has no devices yet: create them with vigil device create.') : 'No device matches.'}</p>
${
  rows.length < matching
    ? html`<p class="more" id="fleet-more">Showing the ${rows.length} most severe of ${matching} devices${filter.q || filter.status || filter.labels ? ' that match' : ''}: search or filter by status to find the others, or <a href="${paths.fleet + query(fleetParams({ ...filter, all: true }))}">show all ${matching}</a>.</p>`
    : ''
}`;
}

/** How many devices match the filter (all of them, however many the page lists). */
function matchingCount(fleet: FleetSnapshot, filter: FleetFilter): number {
  let n = 0;
  for (const d of fleet.devices) if (matches(d, filter)) n += 1;
  return n;
}

/**
 * The fleet page's regions, rendered once per snapshot and filter: a snapshot is shared by every
 * page and live stream of its environment while it is current (live.ts), and nothing in a row
 * depends on the moment it is rendered (times are absolute, made relative in the browser), so ten
 * clients of a 1,000-device fleet do not render its rows ten times a second.
 */
export function fleetRegions(fleet: FleetSnapshot, filter: FleetFilter, nowMs: number): Region[] {
  let byFilter = rendered.get(fleet);
  if (!byFilter) {
    byFilter = new Map();
    rendered.set(fleet, byFilter);
  }
  const key = `${filter.status ?? ''}\n${filter.q ?? ''}\n${labelFilterText(filter.labels) ?? ''}\n${filter.all ? 1 : 0}`;
  let regions = byFilter.get(key);
  if (!regions) {
    regions = [
      { id: 'fleet-summary', html: summary(fleet, filter) },
      { id: 'fleet-rows', rows: fleetRows(fleet, filter, nowMs) },
    ];
    // Bounded: searches typed into the address bar would otherwise pile up until the snapshot goes.
    if (byFilter.size < 32) byFilter.set(key, regions);
  }
  return regions;
}

const rendered = new WeakMap<FleetSnapshot, Map<string, Region[]>>();
const joined = new WeakMap<readonly Row[], Html>();

/** The rows as one piece of markup, made and encoded once per rendering of them. */
function joinedRows(rows: readonly Row[]): Html {
  let all = joined.get(rows);
  if (!all) {
    all = raw(rows.map((r) => r.html.text).join(''));
    all.encoded();
    joined.set(rows, all);
  }
  return all;
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
  const href = paths.fleet + query({ status: current ? undefined : key, q: filter.q, labels: labelFilterText(filter.labels) });
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
  return hasLabels(d.labels, filter.labels);
}

const searchText = (d: FleetDevice) =>
  `${d.displayName}\n${d.deviceName}\n${d.definitionName}${Object.entries(d.labels)
    .map(([k, v]) => `\n${k}=${v}`)
    .join('')}`.toLowerCase();

function fleetRows(fleet: FleetSnapshot, filter: FleetFilter, nowMs: number): Row[] {
  const shown = fleet.devices.filter((d) => matches(d, filter));
  if (!filter.all) shown.length = Math.min(shown.length, FLEET_ROWS);
  return shown.map((d) => ({ key: d.deviceName, html: row(d, nowMs) }));
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
<td data-label="Labels">${labelTags(d.labels)}</td>
<td data-label="Last contact">${timeAgo(d.lastContactMs, nowMs)}</td>
</tr>`;
}
