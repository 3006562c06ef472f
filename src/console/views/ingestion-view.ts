/**
 * The ingestion log page: what became of each submission, newest first, with its code and message;
 * a parser's failure shows where (`file:line:column`) and the payload it failed on.
 */
import type { IngestLogEntry } from '../../ingest/ingest-log.ts';
import type { RecentPayload } from '../../recent-payloads/recent-payload-codec.ts';
import { html, type Html } from '../html.ts';
import { outcomePill } from './device-view.ts';
import { paths, query, timeAgo } from './format.ts';
import { pageHeader } from './layout.ts';
import { rowsHtml, type Region } from './regions.ts';

export interface IngestFilter {
  outcome?: 'accepted' | 'partial' | 'rejected' | 'problems' | undefined;
  code?: string | undefined;
  device?: string | undefined;
}

const OUTCOMES = ['accepted', 'partial', 'rejected', 'problems'] as const;

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

export function matchesIngest(e: IngestLogEntry, f: IngestFilter): boolean {
  if (f.outcome === 'problems' ? e.outcome === 'accepted' : f.outcome !== undefined && e.outcome !== f.outcome)
    return false;
  if (f.code !== undefined && e.code !== f.code) return false;
  if (f.device !== undefined && e.deviceName !== f.device) return false;
  return true;
}

/** A shown entry, with the payload it was, when the device's recent payloads still hold it. */
export interface ShownEntry {
  entry: IngestLogEntry;
  payload: RecentPayload | undefined;
  /** The device's definition, to open the payload in its workbench. */
  definition: { name: string; isPublic: boolean } | undefined;
}

export function ingestionBody(entries: ShownEntry[], filter: IngestFilter, codes: string[], nowMs: number): Html {
  const opt = (value: string, label: string, current: string | undefined) =>
    html`<option value="${value}"${value === (current ?? '') ? html` selected` : ''}>${label}</option>`;
  return html`${pageHeader('Ingestion log', 'What became of each submission, newest first.')}
<form class="filters" method="get" action="${paths.ingestion}">
<div class="field"><label for="in-outcome">Outcome</label><select id="in-outcome" name="outcome">${opt('', 'Any outcome', filter.outcome)}${opt('problems', 'With problems', filter.outcome)}${opt('accepted', 'Accepted', filter.outcome)}${opt('partial', 'Partly accepted', filter.outcome)}${opt('rejected', 'Rejected', filter.outcome)}</select></div>
<div class="field"><label for="in-code">Code</label><select id="in-code" name="code">${opt('', 'Any code', filter.code)}${codes.map((c) => opt(c, c, filter.code))}</select></div>
<div class="field"><label for="in-device">Device</label><input id="in-device" name="device" value="${filter.device ?? ''}" placeholder="Any device" autocomplete="off"></div>
<div class="field field-actions"><button type="submit" class="btn btn-primary">Filter</button> <a class="btn btn-ghost" href="${paths.ingestion}">Clear</a></div>
</form>
<ul class="log" id="ingest-rows" data-rows>${rowsHtml(ingestRows(entries, nowMs))}</ul>
<p class="empty" data-empty-for="ingest-rows"${entries.length > 0 ? html` hidden` : ''}>No submissions${filter.outcome || filter.code || filter.device ? ' match these filters' : ' yet'}.</p>`;
}

export function ingestionRegions(entries: ShownEntry[], nowMs: number): Region[] {
  return [{ id: 'ingest-rows', rows: ingestRows(entries, nowMs) }];
}

function ingestRows(entries: ShownEntry[], nowMs: number) {
  return entries.map((s) => ({ key: `${s.entry.ingestId}\n${s.entry.deviceName ?? ''}`, html: ingestRow(s, nowMs) }));
}

function ingestRow(s: ShownEntry, nowMs: number): Html {
  const e = s.entry;
  const t = Date.parse(e.receivedUTC);
  return html`<li class="log-entry log-${e.outcome}">
<div class="log-head">${outcomePill(e.outcome)}${e.code ? html` <span class="mono code">${e.code}</span>` : ''}
<span class="small">${e.deviceName === null ? html`<span class="muted">no device</span>` : html`<a href="${paths.device(e.deviceName)}">${e.deviceName}</a>`}</span>
<span class="small muted">${Number.isFinite(t) ? timeAgo(t, nowMs) : e.receivedUTC} · ${e.gateway} · <span class="mono">${e.ingestId}</span></span></div>
${e.message ? html`<p class="msg">${messageWithLocation(e.message)}</p>` : ''}
${s.payload ? payloadOf(s, e) : ''}
</li>`;
}

function payloadOf(s: ShownEntry, e: IngestLogEntry): Html {
  const p = s.payload!;
  const shown = p.payload.length > 600 ? `${p.payload.slice(0, 600)}…` : p.payload;
  const bench =
    s.definition && e.deviceName
      ? html` <a class="small" href="${paths.definition(s.definition.isPublic, s.definition.name) + query({ device: e.deviceName, payload: p.ingestId })}">Open in workbench</a>`
      : '';
  return html`<details class="payload-box"><summary>Payload${p.payloadBytes !== undefined || shown !== p.payload ? ' (shortened)' : ''}</summary><pre class="payload">${shown}</pre>${bench}</details>`;
}

/** The message with a parser's `file:line:column` set apart. */
export function messageWithLocation(message: string): Html {
  const m = /\(at ([^()\s]+:\d+:\d+)\)/.exec(message);
  if (!m) return html`${message}`;
  const before = message.slice(0, m.index);
  const after = message.slice(m.index + m[0].length);
  return html`${before}<span class="loc">at <code>${m[1]}</code></span>${after}`;
}
