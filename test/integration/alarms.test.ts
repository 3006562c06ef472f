/**
 * Alarms through the read API, with payloads sent to the gateway and processed by a worker: the
 * listing (most severe first, then oldest; Availability alarms of silent devices), acknowledging
 * (kept through a drop in severity, undone by a rise above it, gone with SUCCESS), who may
 * acknowledge (roles and token scopes), the audit log, and environments kept apart.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access --
   response bodies are untyped on purpose: these tests check them at run time. */
import { describe, expect, it } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.ts';
import { ALERTING_TEST_CONFIG, alertingAdmin, notificationsSettled, until } from '../support/alerting.ts';
import { loseContact } from '../support/contact.ts';
import { eventually } from '../support/eventually.ts';
import { provisionComfort, queueIdle, startPipeline, type Pipeline } from '../support/pipeline.ts';
import { startHttpReceiver } from '../support/receivers.ts';
import { call } from './api-harness.ts';

const PASSWORD = 'correct horse battery';

interface Alarm {
  deviceName: string;
  displayName: string;
  sensorName: string | null;
  eventCategory: string;
  status: string;
  sinceUTC: string;
  acknowledged: boolean;
  acknowledgedBy: string | null;
  acknowledgedUTC: string | null;
  note: string | null;
}

async function setup(overrides: Parameters<typeof startPipeline>[0] = {}) {
  const p = await startPipeline({ roles: 'gateway,worker,api', catalogCacheMs: 0, ...overrides });
  const { key } = await provisionComfort(p, 'acme', ['d1', 'd2']);
  // The first to fall silent: loseContact marks it alone.
  await p.admin.createDevice('acme', {
    name: 'd3',
    definitionName: 'ComfortSensors',
    definitionIsPublic: false,
    availabilityMinutes: 1,
  });
  const { token } = await p.admin.createToken('acme', 'ops', 0, ['read', 'write']);
  const send = async (device: string, reading: Record<string, number>) => {
    const res = await p.post('gateway/submit', key, JSON.stringify({ deviceName: device, ...reading }));
    expect(res.status).toBe(202);
    await eventually(() => queueIdle(p), { message: 'the payload processed' });
  };
  return { p, key, token, send };
}

const list = async (p: Pipeline, token: string): Promise<Alarm[]> => {
  const res = await call(p.apiUrl, '/alarms/list', { token });
  expect(res.status).toBe(200);
  return (res.json as { data: Alarm[] }).data;
};

const acknowledge = (p: Pipeline, token: string, body: Record<string, unknown>) =>
  call(p.apiUrl, '/alarms/acknowledge', { token, body, contentType: 'application/json' });

/** [device, sensor, status, acknowledged] of each alarm, in listing order. */
const summary = (alarms: Alarm[]) =>
  alarms.map((a) => [a.deviceName, a.sensorName, a.status, a.acknowledged] as const);

async function login(p: Pipeline, key: string, username: string): Promise<string> {
  const res = await call(p.apiUrl, `/login/${key}`, { body: { username, password: PASSWORD } });
  expect(res.status).toBe(200);
  return (res.json as { data: { token: string } }).data.token;
}

interface Notification {
  type: string;
  data: { deviceName: string; sensorName: string; eventStatus: string };
}

/** The pipeline with a notifier, a receiver, and a route reminding of WARNING and above every second. */
async function setupReminders() {
  const s = await setup({
    roles: 'gateway,worker,api,notifier',
    ...ALERTING_TEST_CONFIG,
    notifyMinRemindEveryMs: 500,
  });
  const receiver = await startHttpReceiver();
  const admin = alertingAdmin(s.p);
  const { secret } = await admin.createChannel('acme', { name: 'hook', type: 'webhook', url: receiver.url });
  receiver.secrets = [secret ?? ''];
  await admin.createRoute('acme', {
    name: 'pager',
    channels: ['hook'],
    minStatus: 'WARNING',
    remindEvery: '1s',
  });
  const reminders = (device: string) =>
    receiver
      .accepted()
      .map((r) => ({ atMs: r.atMs, ...(r.json as Notification) }))
      .filter((n) => n.type === 'reminder' && n.data.deviceName === device);
  return { ...s, receiver, reminders };
}

describe('alarms', () => {
  it('lists open alarms most severe first, then oldest, with the Availability alarm of a silent device, and closes each when it returns', async () => {
    const { p, token, send } = await setup();
    await send('d1', { Temperature: 26 }); // WARNING
    await send('d2', { Temperature: 31, Humidity: 75 }); // CRITICAL, WARNING
    await send('d3', { Temperature: 20 });
    await loseContact(p, 'acme', 'd3'); // ERROR (the definition's availability status)
    const open = await list(p, token);
    expect(summary(open)).toEqual([
      ['d2', 'Temperature', 'CRITICAL', false],
      ['d3', null, 'ERROR', false],
      ['d1', 'Temperature', 'WARNING', false],
      ['d2', 'Humidity', 'WARNING', false],
    ]);
    expect(open[1]).toMatchObject({ displayName: 'd3', eventCategory: 'Availability', acknowledgedBy: null });
    expect(open[0]).toMatchObject({ eventCategory: 'Sensors', note: null, acknowledgedUTC: null });
    expect(Date.parse(open[2]?.sinceUTC ?? '')).toBeLessThanOrEqual(Date.parse(open[3]?.sinceUTC ?? ''));

    await send('d2', { Temperature: 20, Humidity: 50 });
    await send('d3', { Temperature: 20 }); // contact restored
    expect(summary(await list(p, token))).toEqual([['d1', 'Temperature', 'WARNING', false]]);
    // The other request forms: query parameters and a JSON query string.
    const viaQuery = await call(p.apiUrl, '/alarms/list', { token, query: 'limit=1' });
    expect((viaQuery.json as { data: unknown[] }).data).toHaveLength(1);
    const viaJson = await call(p.apiUrl, '/alarms/list', { token, query: '{"limit":1}' });
    expect(viaJson.status).toBe(200);
  });

  it('keeps an acknowledgement through a drop in severity and re-opens the alarm on a rise above the status acknowledged', async () => {
    const { p, token, send } = await setup();
    await send('d1', { Temperature: 31 }); // CRITICAL
    const acked = await acknowledge(p, token, { deviceName: 'd1', sensorName: 'Temperature', note: 'on it' });
    expect(acked.status).toBe(200);
    expect(acked.json.data).toMatchObject({
      status: 'CRITICAL',
      acknowledged: true,
      acknowledgedBy: 'token:ops',
      note: 'on it',
    });
    await send('d1', { Temperature: 26 }); // WARNING: a drop
    expect(summary(await list(p, token))).toEqual([['d1', 'Temperature', 'WARNING', true]]);
    await send('d1', { Temperature: 31 }); // back to CRITICAL: not above what was acknowledged
    expect(summary(await list(p, token))).toEqual([['d1', 'Temperature', 'CRITICAL', true]]);

    await send('d2', { Temperature: 26 }); // WARNING
    await acknowledge(p, token, { deviceName: 'd2', sensorName: 'Temperature' });
    await send('d2', { Temperature: 31 }); // a rise above the WARNING acknowledged
    const [d2] = (await list(p, token)).filter((a) => a.deviceName === 'd2');
    expect(d2).toMatchObject({ status: 'CRITICAL', acknowledged: false, acknowledgedBy: null, note: null });

    await send('d1', { Temperature: 20 }); // SUCCESS closes it, acknowledgement and all
    await send('d1', { Temperature: 26 });
    const [d1] = (await list(p, token)).filter((a) => a.deviceName === 'd1');
    expect(d1).toMatchObject({ status: 'WARNING', acknowledged: false });
  });

  it("acknowledges the Availability alarm without sensorName, and refuses what is not open or not the environment's", async () => {
    const { p, token, send } = await setup();
    await send('d3', { Temperature: 20 });
    await loseContact(p, 'acme', 'd3');
    const acked = await acknowledge(p, token, { deviceName: 'd3' });
    expect(acked.json.data).toMatchObject({
      sensorName: null,
      eventCategory: 'Availability',
      acknowledged: true,
    });
    const notOpen = await acknowledge(p, token, { deviceName: 'd3', sensorName: 'Temperature' });
    expect([notOpen.status, notOpen.json.error.code]).toEqual([404, 'ALARM_NOT_FOUND']);
    const unknown = await acknowledge(p, token, { deviceName: 'nope' });
    expect([unknown.status, unknown.json.error.code]).toEqual([404, 'DEVICE_NOT_FOUND']);
    const missing = await acknowledge(p, token, {});
    expect([missing.status, missing.json.error.code]).toEqual([400, 'MISSING_ATTRIBUTE']);
    const long = await acknowledge(p, token, { deviceName: 'd3', note: 'x'.repeat(1001) });
    expect([long.status, long.json.error.code]).toEqual([400, 'INVALID_ATTRIBUTE']);
    // A write answers POST only.
    const get = await call(p.apiUrl, '/alarms/acknowledge', { token, query: 'deviceName=d3' });
    expect(get.status).toBe(405);
  });

  it("lets operators and read,write tokens acknowledge but not a viewer's or a read-only token (403), and the audit names who did", async () => {
    // Tokens resolved on every request, so a change of role shows at once.
    const { p, key, send } = await setup({ credentialCacheMs: 0 });
    await send('d1', { Temperature: 26, Humidity: 75, CO2: 1500 });
    await p.admin.createUser('acme', 'olga', PASSWORD); // operator by default
    await p.admin.createUser('acme', 'victor', PASSWORD, 'viewer');
    const { token: readOnly } = await p.admin.createToken('acme', 'grafana', 0);
    const viewer = await login(p, key, 'victor');
    const operator = await login(p, key, 'olga');

    for (const t of [readOnly, viewer]) {
      expect(await list(p, t)).toHaveLength(3); // reading is allowed
      const refused = await acknowledge(p, t, { deviceName: 'd1', sensorName: 'Temperature' });
      expect([refused.status, refused.json.error.code]).toEqual([403, 'FORBIDDEN']);
    }
    expect((await acknowledge(p, operator, { deviceName: 'd1', sensorName: 'Temperature' })).status).toBe(
      200,
    );

    // An operator made viewer loses write at once; a viewer made operator gets it at the next login.
    await p.admin.setRole('acme', 'victor', 'operator');
    await p.admin.setRole('acme', 'olga', 'viewer');
    expect((await acknowledge(p, viewer, { deviceName: 'd1', sensorName: 'CO2' })).status).toBe(403);
    const promoted = await login(p, key, 'victor');
    expect((await acknowledge(p, promoted, { deviceName: 'd1', sensorName: 'CO2' })).status).toBe(200);
    const demoted = await acknowledge(p, operator, { deviceName: 'd1', sensorName: 'Humidity', note: 'x' });
    expect(demoted.status).toBe(403);

    const { entries: audit } = await createAuditLog({ redis: p.redis, keys: p.keys, retentionMs: 86_400_000 }).list('acme', { limit: 10 });
    expect(audit.map((e) => [e.actor, e.action, e.target, e.details.status])).toEqual([
      ['victor', 'alarm.acknowledge', 'd1/CO2', 'WARNING'],
      ['olga', 'alarm.acknowledge', 'd1/Temperature', 'WARNING'],
    ]);
    const unchanged = (await list(p, readOnly)).find((a) => a.sensorName === 'Humidity');
    expect(unchanged?.acknowledged).toBe(false);
  });

  it("keeps environments apart: B's token lists none of A's alarms and cannot acknowledge them (404)", async () => {
    const { p, token, send } = await setup();
    await provisionComfort(p, 'other', ['d9']);
    const { token: other } = await p.admin.createToken('other', 'ops', 0, ['read', 'write']);
    await send('d1', { Temperature: 31 });
    expect(await list(p, token)).toHaveLength(1);
    expect(await list(p, other)).toEqual([]);
    const refused = await acknowledge(p, other, { deviceName: 'd1', sensorName: 'Temperature' });
    expect([refused.status, refused.json.error.code]).toEqual([404, 'DEVICE_NOT_FOUND']);
    expect((await list(p, token))[0]?.acknowledged).toBe(false);
  });

  it("follows a suppressed data point's status without an event", async () => {
    const { p, token, send } = await setup();
    await send('d1', { Temperature: 26 }); // WARNING, with its event
    await p.admin.suppress('acme', 'd1', 'Temperature', 0);
    await p.admin.suppress('acme', 'd1', 'CO2', 0);
    const events = await p.redis.zcard(p.keys.envEvents('acme'));
    await send('d1', { Temperature: 31, CO2: 1500 });
    expect(summary(await list(p, token))).toEqual([
      ['d1', 'Temperature', 'CRITICAL', false],
      ['d1', 'CO2', 'WARNING', false],
    ]);
    await send('d1', { Temperature: 20, CO2: 500 });
    expect(await list(p, token)).toEqual([]);
    expect(await p.redis.zcard(p.keys.envEvents('acme'))).toBe(events);
  });

  it("deletes a device's alarms with it, and an environment's with the environment", async () => {
    const { p, token, send } = await setup();
    await send('d1', { Temperature: 31 });
    await send('d2', { Temperature: 26 });
    await acknowledge(p, token, { deviceName: 'd2', sensorName: 'Temperature' });
    await p.admin.deleteDevice('acme', 'd1');
    expect(summary(await list(p, token))).toEqual([['d2', 'Temperature', 'WARNING', true]]);
    await p.admin.deleteEnvironment('acme', true);
    expect(await p.redis.keys(`${p.config.keyPrefix}:env:acme:*`)).toEqual([]);
  });

  it('reminds of an open alarm until it is acknowledged, again once a rise re-opens it, and not once it closes', async () => {
    const { p, token, send, receiver, reminders } = await setupReminders();
    await send('d1', { Temperature: 26 }); // WARNING
    await send('d2', { Temperature: 26 }); // WARNING, never acknowledged: its reminders keep time
    await until(() => reminders('d1').length >= 2, 'two reminders of d1');
    expect(reminders('d1').every((n) => n.data.eventStatus === 'WARNING')).toBe(true);
    expect(receiver.requests.every((r) => r.verifiedWith === 0)).toBe(true);

    // Acknowledged right after a reminder arrived, long before the next comes due.
    const seen = reminders('d1').length;
    await until(() => reminders('d1').length > seen, 'the next reminder of d1');
    expect((await acknowledge(p, token, { deviceName: 'd1', sensorName: 'Temperature' })).status).toBe(200);
    const atAck = reminders('d1').length;
    const d2AtAck = reminders('d2').length;
    await until(() => reminders('d2').length >= d2AtAck + 4, 'four more reminders of d2');
    // At most one was on its way as the acknowledgement was made.
    expect(reminders('d1').length - atAck).toBeLessThanOrEqual(1);
    const afterAck = reminders('d1').length;

    await send('d1', { Temperature: 31 }); // CRITICAL: a rise above what was acknowledged
    await until(
      () => reminders('d1').filter((n) => n.data.eventStatus === 'CRITICAL').length >= 2,
      'reminders of the re-opened alarm',
    );
    expect(
      reminders('d1')
        .slice(afterAck)
        .every((n) => n.data.eventStatus === 'CRITICAL'),
    ).toBe(true);

    // Closed: every reminder still planned comes due, finds the alarm gone and plans no other.
    await send('d1', { Temperature: 20 });
    await send('d2', { Temperature: 20 });
    await eventually(() => notificationsSettled(p), { timeoutMs: 10_000, message: 'no reminder left' });
    expect(await list(p, token)).toEqual([]);
  });
});
