/**
 * The ingestion log page: what became of each submission, newest first and a page at a time, with
 * its device (display name, then name), code and message and the start of its payload; a parser's
 * failure shows where (`file:line:column`) and the payload it failed on.
 */
import type { IngestLogEntry } from '../../ingest/ingest-log.ts';
import type { RecentPayload } from '../../recent-payloads/recent-payload-codec.ts';
import { html, type Html } from '../html.ts';
import { outcomePill } from './device-view.ts';
import { paths, query, timeAgo } from './format.ts';
import { pageHeader } from './layout.ts';
import { keyedRow, rowsHtml, uniqueKeys, type Region, type Row } from './regions.ts';

export interface IngestFilter {
  outcome?: 'accepted' | 'partial' | 'rejected' | 'ignored' | 'problems' | undefined;
  code?: string | undefined;
  device?: string | undefined;
}

const OUTCOMES = ['accepted', 'partial', 'rejected', 'ignored', 'problems'] as const;

export function parseIngestFilter(params: URLSearchParams): IngestFilter {
  const outcome = params.get('outcome') ?? '';
  const code = (params.get('code') ?? '').trim().toUpperCase();
  const device = (params.get('device') ?? '').trim();
  return {
    outcome: (OUTCOMES as readonly string[]).includes(outcome) ? (outcome as IngestFilter['outcome']) : undefined,
    code: /^[A-Z_]{1,40}$/.test(code) ? code : undefined,
    device: device === '' ? undefined : device.slice(0, 128),
  };
}

/** Which page: at most `limit` entries after the entry `after` names (ingestion-data.ts: cursorOf). */
export interface IngestPageRequest {
  limit: number;
  after: string | undefined;
}

/** Entries per page, as `vigil ingest log` lists by default, and at most. */
export const INGEST_PAGE_DEFAULT = 50;
export const INGEST_PAGE_MAX = 200;
/** Characters of a payload shown on its entry's line. */
const PREVIEW_CHARS = 120;
/** Characters of a failed payload shown when opened. */
const PROBLEM_PAYLOAD_CHARS = 600;

export function parseIngestPage(params: URLSearchParams): IngestPageRequest {
  const limit = Number(params.get('limit') ?? '');
  const after = params.get('after') ?? '';
  return {
    limit: Number.isInteger(limit) && limit > 0 ? Math.min(limit, INGEST_PAGE_MAX) : INGEST_PAGE_DEFAULT,
    after: after === '' ? undefined : after.slice(0, 300),
  };
}

/** The query of a page of the log: its filters, its size when not the default, and its cursor. */
export function ingestParams(f: IngestFilter, page: IngestPageRequest): Record<string, string | undefined> {
  return {
    outcome: f.outcome,
    code: f.code,
    device: f.device,
    limit: page.limit === INGEST_PAGE_DEFAULT ? undefined : String(page.limit),
    after: page.after,
  };
}

export function matchesIngest(e: IngestLogEntry, f: IngestFilter): boolean {
  if (f.outcome === 'problems' ? e.outcome === 'accepted' : f.outcome !== undefined && e.outcome !== f.outcome)
    return false;
  if (f.code !== undefined && e.code !== f.code) return false;
  if (f.device !== undefined && e.deviceName !== f.device) return false;
  return true;
}

/** A shown entry, with its device as the environment has it and the payload it was while kept. */
export interface ShownEntry {
  entry: IngestLogEntry;
  /** Undefined for an entry without a device or of a device the environment does not have. */
  device: { displayName: string; definition: { name: string; isPublic: boolean } } | undefined;
  payload: RecentPayload | undefined;
}

/** What a page shows: its entries and where it is in the log. */
export interface IngestPageView {
  entries: ShownEntry[];
  matching: number;
  offset: number;
  older: string | undefined;
  gone: boolean;
}

export function ingestionBody(
  page: IngestPageView,
  filter: IngestFilter,
  request: IngestPageRequest,
  codes: string[],
  nowMs: number,
): Html {
  const opt = (value: string, label: string, current: string | undefined) =>
    html`<option value="${value}"${value === (current ?? '') ? html` selected` : ''}>${label}</option>`;
  const filtered = filter.outcome || filter.code || filter.device;
  return html`${pageHeader('Ingestion log', 'What became of each submission, newest first.')}
<form class="filters" method="get" action="${paths.ingestion}">
<div class="field"><label for="in-outcome">Outcome</label><select id="in-outcome" name="outcome">${opt('', 'Any outcome', filter.outcome)}${opt('problems', 'With problems', filter.outcome)}${opt('accepted', 'Accepted', filter.outcome)}${opt('partial', 'Partly accepted', filter.outcome)}${opt('rejected', 'Rejected', filter.outcome)}${opt('ignored', 'Ignored', filter.outcome)}</select></div>
<div class="field"><label for="in-code">Code</label><select id="in-code" name="code">${opt('', 'Any code', filter.code)}${codes.map((c) => opt(c, c, filter.code))}</select></div>
<div class="field"><label for="in-device">Device</label><input id="in-device" name="device" value="${filter.device ?? ''}" placeholder="Any device" autocomplete="off"></div>
${request.limit === INGEST_PAGE_DEFAULT ? '' : html`<input type="hidden" name="limit" value="${request.limit}">`}
<div class="field field-actions"><button type="submit" class="btn btn-primary">Filter</button> <a class="btn btn-ghost" href="${paths.ingestion}">Clear</a></div>
</form>
<ul class="log" id="ingest-rows" data-rows>${rowsHtml(ingestRows(page.entries, nowMs))}</ul>
<p class="empty" data-empty-for="ingest-rows"${page.entries.length > 0 ? html` hidden` : ''}>${
    page.gone
      ? 'These entries have left the log: it keeps the newest only.'
      : `No submissions${filtered ? ' match these filters' : ' yet'}.`
  }</p>
<div id="ingest-pager">${pager(page, filter, request)}</div>`;
}

export function ingestionRegions(page: IngestPageView, filter: IngestFilter, request: IngestPageRequest, nowMs: number): Region[] {
  return [
    { id: 'ingest-rows', rows: ingestRows(page.entries, nowMs) },
    { id: 'ingest-pager', html: pager(page, filter, request) },
  ];
}

/** Where the page is among the matching entries, with links to the newest and the next older page. */
function pager(page: IngestPageView, filter: IngestFilter, request: IngestPageRequest): Html {
  const link = (after: string | undefined) => paths.ingestion + query(ingestParams(filter, { ...request, after }));
  const first = request.after === undefined;
  const shown =
    page.entries.length === 0
      ? ''
      : `${page.offset + 1}–${page.offset + page.entries.length} of the ${page.matching} ${page.matching === 1 ? 'entry' : 'entries'} kept${filter.outcome || filter.code || filter.device ? ' that match' : ''}`;
  if (first && page.older === undefined) return html`<p class="pager small muted">${shown}</p>`;
  return html`<nav class="pager" aria-label="Pages of the log"><span class="small muted">${shown}</span>${
    first ? '' : html` <a class="btn btn-ghost" href="${link(undefined)}">Newest</a>`
  }${page.older === undefined ? '' : html` <a class="btn" href="${link(page.older)}">Older</a>`}</nav>`;
}

function ingestRows(entries: ShownEntry[], nowMs: number): Row[] {
  const keys = uniqueKeys(entries, (s) => `${s.entry.ingestId}\n${s.entry.deviceName ?? ''}`);
  return entries.map((s, i) => keyedRow(keys[i] ?? '', (key) => ingestRow(s, key, nowMs)));
}

function ingestRow(s: ShownEntry, key: Html, nowMs: number): Html {
  const e = s.entry;
  const t = Date.parse(e.receivedUTC);
  return html`<li${key} class="log-entry log-${e.outcome}">
<div class="log-head">${outcomePill(e.outcome)}${e.code ? html` <span class="mono code">${e.code}</span>` : ''}
<span class="small device">${deviceOf(s)}</span>
<span class="small muted">${Number.isFinite(t) ? timeAgo(t, nowMs) : e.receivedUTC} · ${e.gateway} · <span class="mono">${e.ingestId}</span></span></div>
${e.message ? html`<p class="msg">${messageWithLocation(e.message)}</p>` : ''}
${payloadOf(s)}
</li>`;
}

/** The device as the other pages name it: its display name (a link to it), then its name. */
function deviceOf(s: ShownEntry): Html {
  const name = s.entry.deviceName;
  if (name === null) return html`<span class="muted">no device</span>`;
  if (!s.device) return html`<span class="mono">${name}</span>`;
  return html`<a href="${paths.device(name)}">${s.device.displayName}</a> <span class="mono muted">${name}</span>`;
}

/**
 * The start of the payload on one line (as text: the template escapes it), with a link to the
 * workbench; a failed payload can be opened at more length.
 */
function payloadOf(s: ShownEntry): Html {
  const e = s.entry;
  const p = s.payload;
  if (!s.device) return html``;
  if (!p) return html`<p class="small muted payload-line">Payload no longer kept.</p>`;
  const bench = paths.definition(s.device.definition.isPublic, s.device.definition.name) + query({ device: e.deviceName ?? undefined, payload: p.ingestId });
  const line = html`<p class="small payload-line"><code class="preview">${shorten(p.payload.replace(/\s+/g, ' '), PREVIEW_CHARS)}</code> <a href="${bench}">Open in workbench</a></p>`;
  if (e.outcome === 'accepted') return line;
  const shown = shorten(p.payload, PROBLEM_PAYLOAD_CHARS);
  return html`${line}<details class="payload-box"><summary>Payload${p.payloadBytes !== undefined || shown !== p.payload ? ' (shortened)' : ''}</summary><pre class="payload">${shown}</pre></details>`;
}

/** `text` up to `chars` characters (whole code points), with an ellipsis when it was longer. */
function shorten(text: string, chars: number): string {
  const points = Array.from(text);
  return points.length <= chars ? text : `${points.slice(0, chars).join('')}…`;
}

/** The message with a parser's `file:line:column` set apart. */
export function messageWithLocation(message: string): Html {
  const m = /\(at ([^()\s]+:\d+:\d+)\)/.exec(message);
  if (!m) return html`${message}`;
  const before = message.slice(0, m.index);
  const after = message.slice(m.index + m[0].length);
  return html`${before}<span class="loc">at <code>${m[1]}</code></span>${after}`;
}
