/**
 * The fleet page: counts per status, a search box, a filter by labels, and the devices a page at a
 * time, the most severe first, with their status and labels; for admins, links to create and
 * import devices. The page is rendered from a FleetPage (fleet-data.ts): what it shows, read.
 */
import { STATUSES, type Status } from '../../domain/types.ts';
import type { FleetCursor, FleetDevice, FleetPage, FleetQuery } from '../fleet-data.ts';
import { html, raw, type Html } from '../html.ts';
import { pageHeader } from './layout.ts';
import { labelFilterOf, labelFilterText, labelTags } from './label-filter.ts';
import { paths, query, silentPill, STATUS_LABEL, statusClass, statusPill, timeAgo } from './format.ts';
import type { Region, Row } from './regions.ts';

/** A filter of the fleet: a status (or SILENT, NO_DATA), a search text, labels the devices must have. */
export interface FleetFilter {
  status?: Status | 'SILENT' | 'NO_DATA' | undefined;
  q?: string | undefined;
  /** Every one of these labels (`labels=site=amsterdam;floor=2`). */
  labels?: Readonly<Record<string, string>> | undefined;
}

/** Which page of the filtered fleet: after a device, or before one (`at`: the status it is listed at). */
export interface FleetPosition {
  after?: FleetCursor | undefined;
  before?: FleetCursor | undefined;
}

/**
 * Devices per page: the page reads and renders only these, whatever the fleet's size (the most
 * severe first, so the ones that need attention are on the first page).
 */
export const FLEET_ROWS = 100;

export const FLEET_FILTERS = [...STATUSES, 'SILENT', 'NO_DATA'] as const;

export function parseFleetFilter(params: URLSearchParams): FleetFilter {
  const status = params.get('status') ?? '';
  const q = (params.get('q') ?? '').trim().slice(0, 200);
  return {
    status: (FLEET_FILTERS as readonly string[]).includes(status)
      ? (status as FleetFilter['status'])
      : undefined,
    q: q === '' ? undefined : q,
    labels: labelFilterOf(params),
  };
}

export function parseFleetPosition(params: URLSearchParams): FleetPosition {
  const at = params.get('at') ?? '';
  const cursor = (name: string | null): FleetCursor | undefined =>
    name === null || name === ''
      ? undefined
      : {
          name: name.slice(0, 200),
          at: (STATUSES as readonly string[]).includes(at) ? (at as Status) : undefined,
        };
  const before = cursor(params.get('before'));
  return before ? { before } : { after: cursor(params.get('after')) };
}

/** The query of a filtered page. */
export const fleetQuery = (filter: FleetFilter, position: FleetPosition): FleetQuery => ({
  ...filter,
  ...position,
  limit: FLEET_ROWS,
});

/** The query parameters of a filter and position (for links and the live stream). */
export const fleetParams = (
  filter: FleetFilter,
  position: FleetPosition = {},
): Record<string, string | undefined> => {
  const cursor = position.before ?? position.after;
  return {
    status: filter.status,
    q: filter.q,
    labels: labelFilterText(filter.labels),
    ...(position.before ? { before: position.before.name } : { after: position.after?.name }),
    at: cursor?.at,
  };
};

/** A key of a filter and position, for the pages shared while they are current. */
export const fleetKey = (filter: FleetFilter, position: FleetPosition): string =>
  JSON.stringify(fleetParams(filter, position));

export function fleetBody(page: FleetPage, filter: FleetFilter, nowMs: number, admin = false): Html {
  const regions = fleetRegions(page, filter, nowMs);
  const rows = rowsOf(regions);
  const total = page.summary.total;
  const actions = admin
    ? html`<div class="page-actions"><a class="btn btn-primary" href="${paths.newDevice}">New device</a><a class="btn" href="${paths.importDevices}">Import CSV</a></div>`
    : undefined;
  return html`${pageHeader('Fleet', html`<span id="fleet-total">${totalText(page)}</span> in ${page.summary.env}`, actions)}
<section aria-label="Devices per status" id="fleet-summary">${summary(page, filter)}</section>
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
<div id="fleet-pager">${pager(page, filter)}</div>`;
}

const totalText = (page: FleetPage) =>
  `${page.summary.total} ${page.summary.total === 1 ? 'device' : 'devices'}`;

/** How many devices match the filter, when the summary tells (not for a search or labels). */
function matchingCount(page: FleetPage, filter: FleetFilter): number | undefined {
  if (filter.q !== undefined || filter.labels !== undefined) return undefined;
  return filter.status === undefined ? page.summary.total : page.summary.counts[filter.status];
}

/** What the page shows of how many, and the links to the first, previous and next pages. */
function pager(page: FleetPage, filter: FleetFilter): Html {
  const n = page.devices.length;
  if (page.first && page.next === undefined && page.searchedTo === undefined) return html``;
  const of = matchingCount(page, filter);
  const link = (position: FleetPosition) => paths.fleet + query(fleetParams(filter, position));
  const shown =
    of === undefined
      ? html`Showing ${n} ${n === 1 ? 'device' : 'devices'} that match${page.first ? '' : ' on this page'}`
      : html`Showing ${page.first ? 'the first ' : ''}${n} of ${of} ${of === 1 ? 'device' : 'devices'}${filter.status ? ' with this status' : ''}, most severe first`;
  const searched =
    page.searchedTo === undefined
      ? ''
      : html`; searched as far as <span class="mono">${page.searchedTo}</span>, ${page.next?.name === page.searchedTo ? 'Next' : 'Previous'} searches on`;
  return html`<p class="pager" id="fleet-more"><span>${shown}${searched}.</span>${
    page.first
      ? ''
      : html`<a class="btn btn-ghost" href="${paths.fleet + query(fleetParams(filter))}">First page</a>`
  }${page.previous ? html`<a class="btn" rel="prev" href="${link({ before: page.previous })}">Previous</a>` : ''}${
    page.next ? html`<a class="btn" rel="next" href="${link({ after: page.next })}">Next</a>` : ''
  }</p>`;
}

/**
 * The fleet page's regions, rendered once per page read: a page is shared by every client and
 * live stream that shows it while it is current (live.ts), and nothing in a row depends on the
 * moment it is rendered (times are absolute, made relative in the browser), so ten clients of the
 * first page do not render its rows ten times a second.
 */
export function fleetRegions(page: FleetPage, filter: FleetFilter, nowMs: number): Region[] {
  let regions = rendered.get(page);
  if (!regions) {
    regions = [
      { id: 'fleet-total', html: html`${totalText(page)}` },
      { id: 'fleet-summary', html: summary(page, filter) },
      { id: 'fleet-rows', rows: page.devices.map((d) => ({ key: d.deviceName, html: row(d, nowMs) })) },
      { id: 'fleet-pager', html: pager(page, filter) },
    ];
    rendered.set(page, regions);
  }
  return regions;
}

const rendered = new WeakMap<FleetPage, Region[]>();
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

function summary(page: FleetPage, filter: FleetFilter): Html {
  const cls = (k: string) =>
    k === 'SILENT' ? 'st-silent' : k === 'NO_DATA' ? 'st-none' : statusClass(k as Status);
  return html`<ul class="counts">
${SUMMARY.map(({ key, label }) => {
  const n = page.summary.counts[key];
  const current = filter.status === key;
  const href =
    paths.fleet +
    query({ status: current ? undefined : key, q: filter.q, labels: labelFilterText(filter.labels) });
  return html`<li><a class="count ${cls(key)}${n === 0 ? ' zero' : ''}" href="${href}"${current ? html` aria-current="true"` : ''}><span class="count-n">${n}</span><span class="count-label">${label}</span></a></li>`;
})}
</ul>`;
}

const searchText = (d: FleetDevice) =>
  `${d.displayName}\n${d.deviceName}\n${d.definitionName}${Object.entries(d.labels)
    .map(([k, v]) => `\n${k}=${v}`)
    .join('')}`.toLowerCase();

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
          (p) =>
            html`<li class="issue ${statusClass(p.status)}">${p.displayName}${p.value !== null ? html` <b>${p.value}</b>` : ''}</li>`,
        )}${more > 0 ? html`<li class="issue more">+${more} more</li>` : ''}</ul>`
  }</td>
<td data-label="Definition">${d.definitionName}${d.definitionIsPublic ? html` <span class="tag">public</span>` : ''}</td>
<td data-label="Labels">${labelTags(d.labels)}</td>
<td data-label="Last contact">${timeAgo(d.lastContactMs, nowMs)}</td>
</tr>`;
}
