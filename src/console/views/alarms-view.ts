/**
 * Open alarms (alerting's alarm index): the alarms page, most severe first, and a device's open
 * alarms on its page; each with Acknowledge and a note for operators, its acknowledgement for all.
 */
import type { ServedAlarm } from '../../alerting/alarms.ts';
import { html, type Html } from '../html.ts';
import type { ConsoleSession } from '../sessions.ts';
import { paths, statusPill, timeAgo } from './format.ts';
import { notice, pageHeader } from './layout.ts';
import { keyedRow, rowsHtml, type Region, type Row } from './regions.ts';
import { roleAllows } from '../../tenancy/types.ts';

/** Longest note, as alerting takes it. */
const NOTE_CHARS = 1000;

export function alarmsBody(alarms: ServedAlarm[], session: ConsoleSession, nowMs: number, flash?: Html): Html {
  return html`${pageHeader('Alarms', html`<span id="alarms-sub">${alarmsSub(alarms)}</span>`)}
${flash ?? ''}
${roleAllows(session.role, 'write') ? '' : notice('note', 'You are signed in as a viewer: you see alarms but cannot acknowledge them.')}
<div class="card table-card table-wrap">
<table class="table alarms">
<caption class="visually-hidden">Open alarms, most severe first</caption>
<thead><tr><th scope="col">Status</th><th scope="col">Alarm</th><th scope="col">Since</th><th scope="col">Acknowledgement</th></tr></thead>
<tbody id="alarm-rows" data-rows>${rowsHtml(alarmRows(alarms, session, nowMs, true, paths.alarms))}</tbody>
</table>
</div>
<p class="empty" data-empty-for="alarm-rows"${alarms.length > 0 ? html` hidden` : ''}>No open alarms: every device is fine.</p>`;
}

function alarmsSub(alarms: ServedAlarm[]): string {
  const open = alarms.filter((a) => !a.acknowledged).length;
  return alarms.length === 0 ? 'Nothing needs attention.' : `${alarms.length} open, ${open} not acknowledged`;
}

export function alarmsRegions(alarms: ServedAlarm[], session: ConsoleSession, nowMs: number): Region[] {
  return [
    { id: 'alarms-sub', html: html`${alarmsSub(alarms)}` },
    { id: 'alarm-rows', rows: alarmRows(alarms, session, nowMs, true, paths.alarms) },
  ];
}

export function alarmRows(
  alarms: ServedAlarm[],
  session: ConsoleSession,
  nowMs: number,
  showDevice: boolean,
  returnTo: string,
): Row[] {
  return alarms.map((a) =>
    keyedRow(`${a.deviceName}\n${a.sensorName ?? ''}`, (key) => alarmRow(a, key, session, nowMs, showDevice, returnTo)),
  );
}

function alarmRow(
  a: ServedAlarm,
  key: Html,
  session: ConsoleSession,
  nowMs: number,
  showDevice: boolean,
  returnTo: string,
): Html {
  const what = a.sensorName === null ? 'No contact' : a.sensorName;
  return html`<tr${key} class="${a.acknowledged ? 'is-acked' : ''}">
<td data-label="Status">${statusPill(a.status)}</td>
<td data-label="Alarm"><span class="strong">${what}</span>${showDevice ? html`<div class="small"><a href="${paths.device(a.deviceName)}">${a.displayName}</a> <span class="mono muted">${a.deviceName}</span></div>` : ''}</td>
<td data-label="Since">${timeAgo(Date.parse(a.sinceUTC), nowMs, '—')}</td>
<td data-label="Acknowledgement">${ackCell(a, session, nowMs, returnTo)}</td>
</tr>`;
}

function ackCell(a: ServedAlarm, session: ConsoleSession, nowMs: number, returnTo: string): Html {
  if (a.acknowledged) {
    const at = a.acknowledgedUTC ? Date.parse(a.acknowledgedUTC) : null;
    return html`<div class="acked"><span class="pill st-none">Acknowledged</span> <span class="small">by ${a.acknowledgedBy ?? '—'} ${timeAgo(at, nowMs, '')}</span>${a.note ? html`<p class="small note">“${a.note}”</p>` : ''}</div>`;
  }
  if (!roleAllows(session.role, 'write')) return html`<span class="muted small">Not acknowledged</span>`;
  const id = `note-${Buffer.from(`${a.deviceName}\n${a.sensorName ?? ''}`).toString('hex').slice(0, 48)}`;
  return html`<form class="ack" method="post" action="${paths.acknowledge}">
<input type="hidden" name="_csrf" value="${session.csrf}">
<input type="hidden" name="deviceName" value="${a.deviceName}">
<input type="hidden" name="sensorName" value="${a.sensorName ?? ''}">
<input type="hidden" name="returnTo" value="${returnTo}">
<label class="visually-hidden" for="${id}">Note for ${a.displayName}: ${a.sensorName ?? 'no contact'}</label>
<input id="${id}" name="note" type="text" maxlength="${NOTE_CHARS}" placeholder="Note (optional)">
<button type="submit" class="btn btn-primary">Acknowledge</button>
</form>`;
}
