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
});
