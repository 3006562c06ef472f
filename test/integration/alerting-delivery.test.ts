/**
 * Notification delivery end to end: events created through the gateway reach real receivers —
 * a webhook receiver verifying every Standard Webhooks signature, a Slack-format receiver and an
 * SMTP server — through routes, the notifier's outbox reader and BullMQ.
 */
import { describe, expect, it } from 'vitest';
import { listEvents } from '../../src/events/list-events.ts';
import {
  ALERTING_TEST_CONFIG,
  alertingAdmin,
  notificationsSettled,
  until,
  verifyingWebhook,
} from '../support/alerting.ts';
import { provisionComfort, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { startHttpReceiver, startSmtpReceiver } from '../support/receivers.ts';
import { PASS_THROUGH_PARSER } from '../fixtures/definitions/temperature.ts';
import type { DefinitionSpec } from '../../src/domain/types.ts';

/** A door whose state is text: WARNING while it is "open". */
const DOOR_SPEC: DefinitionSpec = {
  name: 'Door',
  manufacturer: 'Acme',
  version: '1',
  dataPoints: [
    {
      name: 'State',
      displayName: 'State',
      dataType: 'string',
      hysteresis: 0,
      thresholds: [{ status: 'WARNING', equals: 'open' }],
    },
  ],
};

async function post(p: Pipeline, key: string, device: string, reading: Record<string, number>) {
  const res = await p.post('gateway/submit', key, JSON.stringify({ deviceName: device, ...reading }));
  expect(res.status).toBe(202);
}

/** A pipeline with environment acme (device d1) whose WARNINGs and above go to a verifying webhook receiver. */
async function warningsToWebhook(headers?: [string, string][]) {
  const p = await startPipeline({ roles: 'gateway,worker,notifier', ...ALERTING_TEST_CONFIG });
  const { key } = await provisionComfort(p, 'acme', ['d1']);
  const admin = alertingAdmin(p);
  const receiver = await verifyingWebhook(admin, 'acme', { path: '/hook', ...(headers ? { headers } : {}) });
  await admin.createRoute('acme', { name: 'warnings', channels: ['hook'], minStatus: 'WARNING' });
  return { p, key, receiver };
}

describe('notification delivery', () => {
  it('sends a WARNING to a webhook, signed, with the event exactly as /events/list returns it, and skips returns to SUCCESS', async () => {
    const { p, key, receiver } = await warningsToWebhook([['X-Team', 'ops']]);

    await post(p, key, 'd1', { Temperature: 26 });
    await until(() => receiver.accepted().length >= 1, 'the WARNING', 20_000);
    await post(p, key, 'd1', { Temperature: 20 });
    await post(p, key, 'd1', { Temperature: 31 });
    await until(() => receiver.accepted().length >= 2, 'the CRITICAL', 20_000);

    const served = await listEvents(p.redis, p.keys, { env: 'acme', limit: 10 });
    expect(served.map((e) => e.eventStatus)).toEqual(['CRITICAL', 'SUCCESS', 'WARNING']);
    const bodies = receiver
      .accepted()
      .map((r) => r.json as { type: string; environment: string; timestamp: string; data: unknown });
    expect(bodies.map((b) => b.type)).toEqual(['event', 'event']);
    expect(bodies.map((b) => b.environment)).toEqual(['acme', 'acme']);
    expect(bodies.map((b) => b.data)).toEqual([served[2], served[0]]);
    for (const r of receiver.requests) {
      expect(r.verifiedWith).toBe(0);
      expect(r.headers['x-team']).toBe('ops');
      expect(r.headers['webhook-id']).toMatch(/^event_[0-9a-f]{32}$/);
      expect(r.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    }
    await eventually(() => notificationsSettled(p), {
      timeoutMs: 10_000,
      message: 'nothing left to deliver',
    });
    expect(receiver.requests).toHaveLength(2);
  });

  it('sends an event once even when its outbox entry is read again after the notification was delivered', async () => {
    const { p, key, receiver } = await warningsToWebhook();

    await post(p, key, 'd1', { Temperature: 26 });
    await until(() => receiver.accepted().length >= 1, 'the WARNING', 20_000);
    await eventually(() => notificationsSettled(p), { timeoutMs: 10_000, message: 'the delivery done' });
    // What a notifier that died after enqueueing, before acknowledging, leaves behind: the same
    // entry read again, when the job it made is long done.
    const entries = await p.redis.xrange(p.keys.eventOutbox(), '-', '+');
    expect(entries).toHaveLength(1);
    await p.redis.xadd(p.keys.eventOutbox(), '*', ...entries[0]![1]);
    await eventually(() => notificationsSettled(p), { timeoutMs: 10_000, message: 'the entry read again' });
    expect(receiver.requests).toHaveLength(1);
  });

  it('formats Slack messages and emails naming status, device display name, data point and message', async () => {
    const smtp = await startSmtpReceiver();
    const p = await startPipeline({
      roles: 'gateway,worker,notifier',
      ...ALERTING_TEST_CONFIG,
      smtpUrl: smtp.url,
      smtpFrom: 'vigil@example.test',
    });
    const { key } = await provisionComfort(p, 'acme', ['device_1_hallway']);
    const admin = alertingAdmin(p);
    const slack = await startHttpReceiver();
    await admin.createChannel('acme', {
      name: 'chat',
      type: 'slack',
      url: `${slack.url}/services/T000/B000/XXXX`,
    });
    await admin.createChannel('acme', {
      name: 'mail',
      type: 'email',
      to: ['ops@example.test', 'lead@example.test'],
    });
    await admin.createRoute('acme', { name: 'all', channels: ['chat', 'mail'], includeSuccess: true });

    await post(p, key, 'device_1_hallway', { Temperature: 31 });
    await until(() => slack.accepted().length >= 1 && smtp.mails.length >= 1, 'slack and mail', 20_000);

    const message = slack.requests[0]?.json as { text: string; blocks: unknown[] };
    expect(message.text).toContain('CRITICAL');
    expect(message.text).toContain('device 1 hallway');
    expect(message.text).toContain('Temperature');
    expect(message.text).toContain('Temperature - Overheating - CRITICAL - 31.0 °C');
    expect(message.blocks.length).toBeGreaterThan(0);
    const mail = smtp.mails[0];
    expect(mail?.to.sort()).toEqual(['lead@example.test', 'ops@example.test']);
    expect(mail?.from).toBe('vigil@example.test');
    expect(mail?.subject).toContain('CRITICAL');
    expect(mail?.subject).toContain('device 1 hallway');
    expect(mail?.subject).toContain('Temperature');
    expect(mail?.text).toContain('Temperature - Overheating - CRITICAL - 31.0 °C');
    expect(mail?.text).toMatch(/Time: +\d{4}-\d{2}-\d{2}T/);
  });

  it("shows a device value's line breaks escaped in emails and Slack messages, never as new lines", async () => {
    const smtp = await startSmtpReceiver();
    const p = await startPipeline({
      roles: 'gateway,worker,notifier',
      ...ALERTING_TEST_CONFIG,
      smtpUrl: smtp.url,
      smtpFrom: 'vigil@example.test',
    });
    await p.admin.createEnvironment('acme', 'en');
    await p.admin.applyDefinition({ kind: 'private', env: 'acme' }, DOOR_SPEC, PASS_THROUGH_PARSER);
    await p.admin.createDevice('acme', {
      name: 'door_1',
      definitionName: 'Door',
      definitionIsPublic: false,
      displayName: 'Front door',
    });
    const { key } = await p.admin.createApiKey('acme', 'test');
    const admin = alertingAdmin(p);
    const slack = await startHttpReceiver();
    await admin.createChannel('acme', { name: 'chat', type: 'slack', url: `${slack.url}/services/T0/B0/X` });
    await admin.createChannel('acme', { name: 'mail', type: 'email', to: ['ops@example.test'] });
    await admin.createRoute('acme', { name: 'all', channels: ['chat', 'mail'], includeSuccess: true });

    const submit = async (State: string) =>
      expect(
        (await p.post('gateway/submit', key, JSON.stringify({ deviceName: 'door_1', State }))).status,
      ).toBe(202);
    await submit('open');
    await until(() => slack.accepted().length >= 1 && smtp.mails.length >= 1, 'the WARNING', 20_000);
    // Back to SUCCESS with a value that would forge lines: its event message ends with the value.
    await submit('ok\r\n\r\nURGENT: reset your password at http://evil.example/reset');
    await until(() => slack.accepted().length >= 2 && smtp.mails.length >= 2, 'the SUCCESS', 20_000);

    const text = (slack.accepted()[1]?.json as { text: string }).text;
    const mail = smtp.mails[1];
    const escaped = 'ok\\r\\n\\r\\nURGENT: reset your password at http://evil.example/reset';
    for (const body of [text, mail?.text ?? '']) {
      expect(body).toContain(`State - Returned to success status - SUCCESS - ${escaped}`);
      expect(body.split(/\r?\n/).filter((line) => line.startsWith('URGENT'))).toEqual([]);
    }
    const head = mail?.raw.slice(0, mail.raw.indexOf('\r\n\r\n')) ?? '';
    expect(head.split('\r\n').filter((line) => /^(URGENT|Bcc)/i.test(line))).toEqual([]);
    expect(mail?.subject).toBe('[Vigil] SUCCESS · Front door · State');
  });
});
