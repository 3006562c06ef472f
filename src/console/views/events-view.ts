/** The events page: newest first, filtered by status, category, device and the devices' labels. */
import { STATUSES, type Status } from '../../domain/types.ts';
import type { ServedEvent } from '../../events/list-events.ts';
import { html, type Html } from '../html.ts';
import { paths, STATUS_LABEL, statusPill, timeAgo } from './format.ts';
import { pageHeader } from './layout.ts';
import { labelFilterOf, labelFilterText } from './label-filter.ts';
import { keyedRow, rowsHtml, uniqueKeys, type Region, type Row } from './regions.ts';

export interface EventFilter {
  status?: Status | undefined;
  category?: 'Sensors' | 'Availability' | undefined;
  device?: string | undefined;
  /** Only events of the devices with every one of these labels (now). */
  labels?: Readonly<Record<string, string>> | undefined;
}

export function parseEventFilter(params: URLSearchParams): EventFilter {
  const status = params.get('status') ?? '';
  const category = params.get('category') ?? '';
  const device = (params.get('device') ?? '').trim();
  return {
    status: (STATUSES as readonly string[]).includes(status) ? (status as Status) : undefined,
    category: category === 'Sensors' || category === 'Availability' ? category : undefined,
    device: device === '' ? undefined : device.slice(0, 128),
    labels: labelFilterOf(params),
  };
}

export function eventsBody(events: ServedEvent[], filter: EventFilter, deviceNames: string[], nowMs: number): Html {
  const opt = (value: string, label: string, current: string | undefined) =>
    html`<option value="${value}"${value === (current ?? '') ? html` selected` : ''}>${label}</option>`;
  return html`${pageHeader('Events', 'Threshold crossings and lost or restored contact, newest first.')}
<form class="filters" method="get" action="${paths.events}">
<div class="field"><label for="ev-status">Status</label><select id="ev-status" name="status">${opt('', 'Any status', filter.status)}${STATUSES.map((s) => opt(s, STATUS_LABEL[s], filter.status))}</select></div>
<div class="field"><label for="ev-category">Category</label><select id="ev-category" name="category">${opt('', 'Any category', filter.category)}${opt('Sensors', 'Sensors', filter.category)}${opt('Availability', 'Availability', filter.category)}</select></div>
<div class="field"><label for="ev-device">Device</label><input id="ev-device" name="device" list="ev-devices" value="${filter.device ?? ''}" placeholder="Any device" autocomplete="off"><datalist id="ev-devices">${deviceNames.map((n) => html`<option value="${n}"></option>`)}</datalist></div>
<div class="field"><label for="ev-labels">Labels</label><input id="ev-labels" name="labels" value="${labelFilterText(filter.labels) ?? ''}" placeholder="site=amsterdam" autocomplete="off"></div>
<div class="field field-actions"><button type="submit" class="btn btn-primary">Filter</button> <a class="btn btn-ghost" href="${paths.events}">Clear</a></div>
</form>
<div class="card table-card table-wrap">
<table class="table events">
<thead><tr><th scope="col">When</th><th scope="col">Status</th><th scope="col">Device</th><th scope="col">Message</th></tr></thead>
<tbody id="event-rows" data-rows>${rowsHtml(eventRows(events, nowMs, true))}</tbody>
</table>
</div>
<p class="empty" data-empty-for="event-rows"${events.length > 0 ? html` hidden` : ''}>No events${filter.status || filter.category || filter.device || filter.labels ? ' match these filters' : ' yet'}.</p>`;
}

/** The query parameters of a filter (the live stream's). */
export const eventParams = (f: EventFilter): Record<string, string | undefined> => ({
  status: f.status,
  category: f.category,
  device: f.device,
  labels: labelFilterText(f.labels),
});

export function eventsRegions(events: ServedEvent[], nowMs: number): Region[] {
  return [{ id: 'event-rows', rows: eventRows(events, nowMs, true) }];
}

/**
 * Rows of events, keyed by what tells them apart (an event has no id here), so that a new event adds
 * its row and leaves the others be.
 */
export function eventRows(events: ServedEvent[], nowMs: number, showDevice: boolean): Row[] {
  const keys = uniqueKeys(events, (e) => `${e.receivedUTC}\n${e.deviceName}\n${e.sensorName}\n${e.eventStatus}`);
  return events.map((e, i) => keyedRow(keys[i] ?? '', (key) => eventRow(e, key, nowMs, showDevice)));
}

function eventRow(e: ServedEvent, key: Html, nowMs: number, showDevice: boolean): Html {
  return html`<tr${key}>
<td data-label="When">${timeAgo(Date.parse(e.receivedUTC), nowMs)}</td>
<td data-label="Status">${statusPill(e.eventStatus)}</td>
${showDevice ? html`<td data-label="Device"><a href="${paths.device(e.deviceName)}">${e.displayName}</a><div class="mono muted small">${e.deviceName}</div></td>` : ''}
<td data-label="Message"><span class="small">${e.eventCategory === 'Availability' ? 'Availability' : e.sensorName}</span><div>${e.eventMessage}</div></td>
</tr>`;
}
