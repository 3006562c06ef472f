import { describe, expect, it } from 'vitest';
import { emailMessage, slackMessage, webhookBody } from '../../../src/alerting/messages.ts';
import type { EventRecord } from '../../../src/domain/types.ts';
import { serveEvent } from '../../../src/events/list-events.ts';

const event: EventRecord = {
  id: 'e1',
  env: 'acme',
  deviceName: 'device_1_hallway',
  displayName: 'Hallway <main>',
  sensorName: 'Temperature',
  sensorType: 'tempC',
  sensorValue: 31.2,
  eventStatus: 'CRITICAL',
  eventCategory: 'Sensors',
  eventMessage: 'Temperature - Overheating - CRITICAL - 31.2 °C',
  receivedMs: Date.UTC(2026, 0, 2, 3, 4, 5),
};
const base = { env: 'acme', channelName: 'hook', createdMs: Date.UTC(2026, 0, 2, 3, 4, 6) };

describe('notification messages', () => {
  it('gives webhooks {type, timestamp, environment, data} with the event as served', () => {
    expect(JSON.parse(webhookBody({ ...base, kind: 'event', event }))).toEqual({
      type: 'event',
      timestamp: '2026-01-02T03:04:06.000Z',
      environment: 'acme',
      data: serveEvent(event),
    });
    const digest = JSON.parse(
      webhookBody({ ...base, kind: 'digest', digest: { count: 250, events: [event] } }),
    ) as {
      data: unknown;
    };
    expect(digest.data).toEqual({ count: 250, events: [serveEvent(event)] });
    expect(JSON.parse(webhookBody({ ...base, kind: 'test' }))).toMatchObject({
      type: 'test',
      data: { channel: 'hook' },
    });
  });

  it('names status, display name, data point and message in Slack and email, escaping Slack markup', () => {
    const slack = slackMessage({ ...base, kind: 'event', event });
    expect(slack.text).toContain('CRITICAL · Hallway &lt;main&gt; · Temperature');
    expect(slack.text).toContain(event.eventMessage);
    const mail = emailMessage({ ...base, kind: 'reminder', event });
    expect(mail.subject).toBe('[Vigil] Reminder: CRITICAL · Hallway <main> · Temperature');
    expect(mail.text).toContain(event.eventMessage);
    expect(mail.text).toContain('2026-01-02T03:04:05.000Z');
    const held = emailMessage({ ...base, kind: 'digest', digest: { count: 3, events: [event] } });
    expect(held.subject).toBe('[Vigil] Digest: 3 notifications in acme');
  });

  it('keeps control characters out of mail subjects', () => {
    const mail = emailMessage({
      ...base,
      kind: 'event',
      event: { ...event, displayName: 'Hall\r\nBcc: x@y' },
    });
    expect(mail.subject).not.toMatch(/[\r\n]/);
  });

  it('shows control characters of values, names and display names as visible escapes, never as breaks', () => {
    const hostile: EventRecord = {
      ...event,
      displayName: 'Hall\r\nBcc: x@y',
      sensorName: 'State\u2028Fake',
      eventMessage:
        'State - Returned to success status - SUCCESS - ok\r\n\r\nURGENT: reset your password at http://evil.example/\u202e',
    };
    // Only the characters Vigil writes itself break lines; nothing raw from outside remains.
    const isRaw = (n: number) =>
      (n < 0x20 && n !== 0x0a) ||
      (n >= 0x7f && n <= 0x9f) ||
      n === 0x2028 ||
      n === 0x2029 ||
      (n >= 0x202a && n <= 0x202e) ||
      (n >= 0x2066 && n <= 0x2069);
    const raw = (text: string) => [...text].filter((c) => isRaw(c.codePointAt(0) ?? 0));
    const forged = (text: string) => text.split('\n').filter((l) => /^(URGENT|Bcc|Fake)/.test(l));
    const texts = [
      slackMessage({ ...base, kind: 'event', event: hostile }).text,
      slackMessage({ ...base, kind: 'digest', digest: { count: 1, events: [hostile] } }).text,
      ...[
        emailMessage({ ...base, kind: 'event', event: hostile }),
        emailMessage({ ...base, kind: 'digest', digest: { count: 1, events: [hostile] } }),
      ].flatMap((m) => [m.subject, m.text]),
    ];
    for (const text of texts) {
      expect(forged(text)).toEqual([]);
      expect(raw(text)).toEqual([]);
    }
    expect(texts[0]).toContain('ok\\r\\n\\r\\nURGENT: reset your password');
    expect(texts[2]).toBe('[Vigil] CRITICAL · Hall\\r\\nBcc: x@y · State\\u2028Fake');
  });
});
