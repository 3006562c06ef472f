/**
 * The words of a notification for each channel type: the Standard Webhooks body, a Slack
 * incoming-webhook message and an email. Pure: what to say, not how to send it.
 *
 * Names, display names and event messages (which carry a device's values) come from outside: in a
 * Slack message or an email each control character of theirs is shown as a visible escape (`\r`,
 * `\n`, `\u202e`), so a value cannot forge a line ("URGENT: reset your password…") or a mail
 * header, whatever built the event text. Only the line breaks written here break lines. The webhook
 * body carries the event as JSON, exactly as served.
 */
import type { EventRecord, Status } from '../domain/types.ts';
import { serveEvent } from '../events/list-events.ts';
import { escapeControls as inline } from '../lib/control-characters.ts';
import type { DigestContent, NotificationKind } from './notification.ts';

/** Everything a message is made of. */
export interface NotificationContent {
  kind: NotificationKind;
  env: string;
  channelName: string;
  /** When the notification was created (stable across retries), epoch ms. */
  createdMs: number;
  event?: EventRecord;
  digest?: DigestContent;
}

/** Events shown one by one in a Slack or email digest (the webhook digest carries up to 100). */
const DIGEST_LINES = 20;

const TEST_MESSAGE = 'This is a test notification from Vigil.';

/** The webhook body: `{type, timestamp, environment, data}`. */
export function webhookBody(c: NotificationContent): string {
  let data: unknown;
  switch (c.kind) {
    case 'event':
    case 'reminder':
      data = c.event ? serveEvent(c.event) : null;
      break;
    case 'digest':
      data = { count: c.digest?.count ?? 0, events: (c.digest?.events ?? []).map(serveEvent) };
      break;
    case 'test':
      data = { message: TEST_MESSAGE, channel: c.channelName };
      break;
  }
  return JSON.stringify({
    type: c.kind,
    timestamp: new Date(c.createdMs).toISOString(),
    environment: c.env,
    data,
  });
}

const ICONS: Record<Status, string> = {
  SUCCESS: ':white_check_mark:',
  INFO: ':information_source:',
  WARNING: ':warning:',
  ERROR: ':red_circle:',
  CRITICAL: ':rotating_light:',
};

/** Slack mrkdwn treats &, < and > as markup. */
const slackText = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** One line naming status, device display name and data point; the event message follows. */
function headline(e: EventRecord): string {
  return `${e.eventStatus} · ${inline(e.displayName || e.deviceName)} · ${inline(e.sensorName)}`;
}

/** The event message on one line. */
const message = (e: EventRecord) => inline(e.eventMessage);

function slackEventText(e: EventRecord, reminder: boolean): string {
  const prefix = reminder ? 'Reminder: ' : '';
  return `${ICONS[e.eventStatus]} ${prefix}*${slackText(headline(e))}*\n${slackText(message(e))}`;
}

export function slackMessage(c: NotificationContent): { text: string; blocks: unknown[] } {
  let text: string;
  if ((c.kind === 'event' || c.kind === 'reminder') && c.event)
    text = slackEventText(c.event, c.kind === 'reminder');
  else if (c.kind === 'digest') {
    const events = c.digest?.events ?? [];
    const shown = events.slice(-DIGEST_LINES);
    text = [
      `:bell: *${c.digest?.count ?? 0} notifications* in ${slackText(inline(c.env))} were held and are summarised here` +
        (shown.length < (c.digest?.count ?? 0) ? ` (the last ${shown.length}):` : ':'),
      ...shown.map((e) => `• ${ICONS[e.eventStatus]} ${slackText(headline(e))}: ${slackText(message(e))}`),
    ].join('\n');
  } else text = `:white_check_mark: ${TEST_MESSAGE} (channel ${slackText(inline(c.channelName))})`;
  const context = `environment ${slackText(inline(c.env))} · ${new Date(c.event?.receivedMs ?? c.createdMs).toISOString()}`;
  return {
    text,
    blocks: [
      { type: 'section', text: { type: 'mrkdwn', text } },
      { type: 'context', elements: [{ type: 'mrkdwn', text: context }] },
    ],
  };
}

function eventLines(e: EventRecord): string[] {
  return [
    message(e),
    '',
    `Time:        ${new Date(e.receivedMs).toISOString()}`,
    `Status:      ${e.eventStatus} (${e.eventCategory})`,
    `Device:      ${inline(e.displayName)} (${inline(e.deviceName)})`,
    `Data point:  ${inline(e.sensorName)}`,
  ];
}

/** The subject: one line, whatever its parts hold (no CR or LF can reach a mail header). */
const subjectLine = (s: string) => inline(s);

export function emailMessage(c: NotificationContent): { subject: string; text: string } {
  const footer = [
    '',
    `Environment: ${inline(c.env)}`,
    `Sent by Vigil through channel ${inline(c.channelName)}.`,
  ];
  if ((c.kind === 'event' || c.kind === 'reminder') && c.event) {
    const prefix = c.kind === 'reminder' ? 'Reminder: ' : '';
    return {
      subject: subjectLine(`[Vigil] ${prefix}${headline(c.event)}`),
      text: [...eventLines(c.event), ...footer].join('\n'),
    };
  }
  if (c.kind === 'digest') {
    const events = c.digest?.events ?? [];
    const shown = events.slice(-DIGEST_LINES);
    const count = c.digest?.count ?? 0;
    return {
      subject: subjectLine(`[Vigil] Digest: ${count} notifications in ${c.env}`),
      text: [
        `${count} notifications were held (flood control or quiet hours)${shown.length < count ? `; the last ${shown.length}` : ''}:`,
        '',
        ...shown.map((e) => `${new Date(e.receivedMs).toISOString()}  ${headline(e)}: ${message(e)}`),
        ...footer,
      ].join('\n'),
    };
  }
  return {
    subject: subjectLine(`[Vigil] Test notification (${c.channelName})`),
    text: [TEST_MESSAGE, ...footer].join('\n'),
  };
}
