/**
 * Channels (signed webhooks, Slack, email) and routes (which events go to which channels, with a
 * filter on the devices' labels): lists, create forms, a test notification with the receiver's
 * answer, and deletion after a confirmation.
 */
import type { ChannelView } from '../../alerting/channel-admin.ts';
import type { RouteView } from '../../alerting/route-admin.ts';
import type { AppError } from '../../errors/app-error.ts';
import { html, type Html } from '../html.ts';
import type { ConsoleSession } from '../sessions.ts';
import { paths } from './format.ts';
import { labelTags } from './label-filter.ts';
import {
  confirmBody,
  csrfField,
  hidden,
  labelRows,
  manageFrame,
  secretOnce,
  selectField,
  textField,
  utcText,
} from './manage-view.ts';

/** What a test notification got from the receiver. */
export interface ChannelTestResult {
  channel: string;
  ok: boolean;
  status: number | null;
  answer: string;
  body: string | null;
  ms: number;
}

export interface ChannelFormValues {
  name: string;
  type: string;
  url: string;
  headers: string;
  to: string;
}

export interface RouteFormValues {
  name: string;
  channels: string[];
  category: string;
  minStatus: string;
  device: string;
  sensor: string;
  labels: [string, string][];
  includeSuccess: boolean;
  remindEvery: string;
  quietHours: string;
  timeZone: string;
}

export const BLANK_CHANNEL: ChannelFormValues = { name: '', type: 'webhook', url: '', headers: '', to: '' };
export const BLANK_ROUTE: RouteFormValues = {
  name: '',
  channels: [],
  category: '',
  minStatus: '',
  device: '',
  sensor: '',
  labels: [],
  includeSuccess: false,
  remindEvery: '',
  quietHours: '',
  timeZone: '',
};

export function alertingBody(o: {
  session: ConsoleSession;
  channels: ChannelView[];
  routes: RouteView[];
  error?: AppError | undefined;
  /** Which form the error is of: its values are kept in it. */
  channel?: ChannelFormValues;
  route?: RouteFormValues;
  test?: ChannelTestResult;
  shown?: Html;
}): Html {
  return manageFrame({
    section: 'alerting',
    title: 'Channels and routes',
    sub: 'Channels are where notifications go; routes decide which events go to which channels.',
    error: o.error,
    body: html`${o.shown ?? ''}${o.test ? testResult(o.test) : ''}
<section class="card" aria-labelledby="channels-h">
<h2 id="channels-h">Channels</h2>
<div class="table-wrap"><table class="table channels">
<thead><tr><th scope="col">Channel</th><th scope="col">Sends to</th><th scope="col">Created</th><th scope="col">Actions</th></tr></thead>
<tbody id="channel-rows">${o.channels.map(
      (c) => html`<tr data-key="${c.name}">
<td data-label="Channel"><span class="strong">${c.name}</span> <span class="tag">${c.type}</span></td>
<td data-label="Sends to"><span class="mono small break">${c.target}</span>${c.headers?.length ? html`<div class="small muted">${c.headers.join(', ')}</div>` : ''}</td>
<td data-label="Created">${utcText(c.createdUTC)}</td>
<td data-label="Actions"><span class="row-actions"><form class="inline-form" method="post" action="${paths.alerting}/channels/test">${csrfField(o.session)}${hidden('name', c.name)}<button type="submit" class="btn btn-small">Send a test</button></form><a class="btn btn-small btn-danger-ghost" href="${paths.alerting}/channels/${encodeURIComponent(c.name)}/delete">Delete</a></span></td>
</tr>`,
    )}</tbody>
</table></div>
${o.channels.length === 0 ? html`<p class="empty">No channels yet.</p>` : ''}
${channelForm(o.session, o.channel ?? BLANK_CHANNEL)}
</section>
<section class="card" aria-labelledby="routes-h">
<h2 id="routes-h">Routes</h2>
<div class="table-wrap"><table class="table routes">
<thead><tr><th scope="col">Route</th><th scope="col">Channels</th><th scope="col">Events</th><th scope="col">Labels</th><th scope="col">Actions</th></tr></thead>
<tbody id="route-rows">${o.routes.map(
      (r) => html`<tr data-key="${r.name}">
<td data-label="Route"><span class="strong">${r.name}</span></td>
<td data-label="Channels">${r.channels.join(', ')}</td>
<td data-label="Events"><span class="small">${r.filter}</span>${r.remindEvery !== null ? html`<div class="small muted">reminds every ${Math.round(r.remindEvery / 60_000)} min</div>` : ''}${r.quietHours ? html`<div class="small muted">quiet ${r.quietHours}</div>` : ''}</td>
<td data-label="Labels">${labelTags(r.labels)}</td>
<td data-label="Actions"><a class="btn btn-small btn-danger-ghost" href="${paths.alerting}/routes/${encodeURIComponent(r.name)}/delete">Delete</a></td>
</tr>`,
    )}</tbody>
</table></div>
${o.routes.length === 0 ? html`<p class="empty">No routes: no event is sent anywhere.</p>` : ''}
${routeForm(o.session, o.route ?? BLANK_ROUTE, o.channels)}
</section>`,
  });
}

function testResult(t: ChannelTestResult): Html {
  return html`<section class="card test-result ${t.ok ? 'is-ok' : 'is-failed'}" id="test-result" aria-labelledby="test-h" role="status">
<h2 id="test-h">Test notification to ${t.channel}: ${t.ok ? 'accepted' : 'not accepted'}</h2>
<p><span class="pill ${t.ok ? 'st-ok' : 'st-error'}">${t.status === null ? 'No answer' : String(t.status)}</span> <span class="answer">${t.answer}</span> <span class="muted small">${t.ms} ms</span></p>
${t.body ? html`<pre class="payload">${t.body}</pre>` : ''}
</section>`;
}

function channelForm(session: ConsoleSession, v: ChannelFormValues): Html {
  return html`<details class="create"${v.name !== '' ? html` open` : ''}><summary class="btn">New channel</summary>
<form class="stack-form manage-form narrow-form" method="post" action="${paths.alerting}/channels/create">
${csrfField(session)}
${textField({ id: 'ch-name', name: 'name', label: 'Name', value: v.name, required: true, hint: 'Letters, digits, _ . - (at most 64).' })}
${selectField({
  id: 'ch-type',
  name: 'type',
  label: 'Type',
  value: v.type,
  options: [
    ['webhook', 'Webhook (signed)'],
    ['slack', 'Slack'],
    ['email', 'Email'],
  ],
})}
${textField({ id: 'ch-url', name: 'url', label: 'URL', value: v.url, hint: 'Webhook: the receiver; Slack: the incoming-webhook URL. Not for email.' })}
<div class="field"><label for="ch-headers">Headers</label><textarea id="ch-headers" name="headers" rows="2" class="mono" spellcheck="false" placeholder="Authorization: Bearer …">${v.headers}</textarea><p class="hint">Webhook only: one <code>Name: value</code> per line (stored encrypted).</p></div>
${textField({ id: 'ch-to', name: 'to', label: 'Recipients', value: v.to, hint: 'Email only: addresses separated by commas.' })}
<div class="actions"><button type="submit" class="btn btn-primary">Create channel</button></div>
</form></details>`;
}

function routeForm(session: ConsoleSession, v: RouteFormValues, channels: ChannelView[]): Html {
  return html`<details class="create"${v.name !== '' ? html` open` : ''}><summary class="btn">New route</summary>
<form class="stack-form manage-form narrow-form" method="post" action="${paths.alerting}/routes/create">
${csrfField(session)}
${textField({ id: 'rt-name', name: 'name', label: 'Name', value: v.name, required: true })}
<fieldset class="checks"><legend>Channels</legend>${
    channels.length === 0
      ? html`<p class="hint">Create a channel first.</p>`
      : channels.map(
          (c, i) =>
            html`<label class="check" for="rt-ch-${i}"><input type="checkbox" id="rt-ch-${i}" name="channels" value="${c.name}"${v.channels.includes(c.name) ? html` checked` : ''}> ${c.name} <span class="tag">${c.type}</span></label>`,
        )
  }</fieldset>
<div class="form-grid">
${selectField({
  id: 'rt-category',
  name: 'category',
  label: 'Category',
  value: v.category,
  options: [
    ['', 'Any'],
    ['Sensors', 'Sensors'],
    ['Availability', 'Availability'],
  ],
})}
${selectField({
  id: 'rt-min',
  name: 'minStatus',
  label: 'Least status',
  value: v.minStatus,
  options: [
    ['', 'Any (INFO and above)'],
    ['INFO', 'INFO'],
    ['WARNING', 'WARNING'],
    ['ERROR', 'ERROR'],
    ['CRITICAL', 'CRITICAL'],
  ],
})}
${textField({ id: 'rt-device', name: 'device', label: 'Devices', value: v.device, placeholder: 'freezer-*', hint: 'Device names: * any characters, ? one. Empty: every device.' })}
${textField({ id: 'rt-sensor', name: 'sensor', label: 'Data point', value: v.sensor, hint: 'One data point; empty: all.' })}
</div>
${labelRows(v.labels, 'rt-label')}
<label class="check" for="rt-success"><input type="checkbox" id="rt-success" name="includeSuccess" value="true"${v.includeSuccess ? html` checked` : ''}> Also send returns to OK (so that a receiver can close its incident)</label>
<div class="form-grid">
${textField({ id: 'rt-remind', name: 'remindEvery', label: 'Remind every', value: v.remindEvery, placeholder: '1h', hint: 'Of an alarm not acknowledged; empty: no reminders.' })}
${textField({ id: 'rt-quiet', name: 'quietHours', label: 'Quiet hours', value: v.quietHours, placeholder: '22:00-07:00', hint: 'Held until they end; empty: none.' })}
${textField({ id: 'rt-tz', name: 'timeZone', label: 'Time zone', value: v.timeZone, placeholder: 'Europe/Amsterdam', hint: 'Of the quiet hours (UTC).' })}
</div>
<div class="actions"><button type="submit" class="btn btn-primary">Create route</button></div>
</form></details>`;
}

export function channelSecretShown(name: string, secret: string): Html {
  return secretOnce({
    id: 'channel-secret',
    label: `Signing secret of ${name}`,
    secret,
    about:
      'The receiver checks each notification’s signature with it (Standard Webhooks: webhook-id, webhook-timestamp, webhook-signature).',
  });
}

export function deleteChannelBody(session: ConsoleSession, c: ChannelView, error?: AppError): Html {
  return confirmBody({
    session,
    section: 'alerting',
    title: `Delete channel ${c.name}?`,
    text: 'Notifications are not sent to it any more. A channel a route sends to cannot be deleted: delete the route first.',
    action: `${paths.alerting}/channels/${encodeURIComponent(c.name)}/delete`,
    button: 'Delete channel',
    back: paths.alerting,
    error,
  });
}

export function deleteRouteBody(session: ConsoleSession, r: RouteView, error?: AppError): Html {
  return confirmBody({
    session,
    section: 'alerting',
    title: `Delete route ${r.name}?`,
    text: html`Events that match it (${r.filter}) are not sent to ${r.channels.join(', ')} any more.`,
    action: `${paths.alerting}/routes/${encodeURIComponent(r.name)}/delete`,
    button: 'Delete route',
    back: paths.alerting,
    error,
  });
}
