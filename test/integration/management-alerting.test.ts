/**
 * The management API's alerting operations on the api role that `startVigil` serves, with a
 * notifier beside it: channels (a webhook's secret answered once, listings masked, tests through
 * the real delivery path), routes (with labels: an event reaches a route only when its device has
 * them), failed notifications sent again, the delivery log. For each operation: success, a
 * validation error by its code, 403 for tokens without scope admin, 404 across environments, and
 * the audit entry of each change.
 */
/* eslint-disable @typescript-eslint/no-unsafe-member-access, @typescript-eslint/no-unsafe-call, @typescript-eslint/no-unsafe-argument, @typescript-eslint/no-unsafe-assignment, @typescript-eslint/no-unsafe-return --
   response bodies are untyped on purpose: these tests check them at run time. */
import { beforeAll, describe, expect, it } from 'vitest';
import {
  ALERTING_TEST_CONFIG,
  emitEvents,
  makeEvent,
  notificationsSettled,
  until,
} from '../support/alerting.ts';
import { eventually } from '../support/eventually.ts';
import type { Pipeline } from '../support/pipeline.ts';
import { startHttpReceiver, type HttpReceiver } from '../support/receivers.ts';
import { call, type ApiHarness } from './api-harness.ts';
import { startManagementHarness } from './management-harness.ts';

const PATHS = [
  '/channels/create',
  '/channels/list',
  '/channels/delete',
  '/channels/rotateSecret',
  '/channels/test',
  '/routes/create',
  '/routes/list',
  '/routes/delete',
  '/notifications/failed',
  '/notifications/retry',
  '/notifications/log',
];

/** The devices of the notifications a receiver accepted, one per webhook-id (delivery is at least once). */
function notifiedDevices(r: HttpReceiver): string[] {
  const byId = new Map<string, string>();
  for (const q of r.accepted()) {
    const body = q.json as { data?: { deviceName?: string } };
    byId.set(String(q.headers['webhook-id']), body.data?.deviceName ?? '');
  }
  return [...byId.values()].sort();
}

describe('management API: channels, routes and notifications', () => {
  let h: ApiHarness;
  let api: string;
  let admin: string;
  let operator: string;
  let reader: string;
  let otherAdmin: string;
  /** What the outbox and queue helpers read: this file's Redis and keys. */
  let pipe: Pipeline;

  beforeAll(async () => {
    const m = await startManagementHarness({ roles: 'api,notifier', ...ALERTING_TEST_CONFIG });
    ({ h, api } = m);
    ({ admin, operator, reader, otherAdmin } = m.tokens);
    pipe = { redis: h.redis, keys: h.keys } as Pipeline;
    return () => m.close();
  });

  const post = (path: string, token: string, body: unknown) =>
    call(api, path, { token, body, contentType: 'application/json' });
  const ok = async (path: string, body: unknown, token = admin) => {
    const r = await post(path, token, body);
    expect([path, r.status], r.text).toEqual([path, 200]);
    return r.json.data;
  };
  const refusal = async (path: string, body: unknown, token = admin) => {
    const r = await post(path, token, body);
    return [r.status, r.json.error.code, r.json.error.attribute];
  };
  const audit = async (action: string, { env = 'acme', target }: { env?: string; target?: string } = {}) =>
    (await post('/audit/list', env === 'acme' ? admin : otherAdmin, { action, target })).json.data.entries;

  it('creates a webhook channel, answering its signing secret once, and lists it masked, audited', async () => {
    const receiver = await startHttpReceiver();
    const created = await ok('/channels/create', {
      name: 'hook',
      type: 'webhook',
      url: `${receiver.url}/in?token=q-s3cret`,
      headers: { Authorization: 'Bearer hdr-s3cret' },
    });
    expect(Object.keys(created).sort()).toEqual(['name', 'secret', 'type']);
    expect(created).toMatchObject({ name: 'hook', type: 'webhook' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const mail = await ok('/channels/create', { name: 'mail', type: 'email', to: ['ops@example.test'] });
    expect(mail).toEqual({ name: 'mail', type: 'email' });

    const listed = await ok('/channels/list', {});
    expect(listed).toEqual([
      {
        name: 'hook',
        type: 'webhook',
        createdUTC: expect.stringMatching(/Z$/),
        target: `${receiver.url}/in?token=********`,
        headers: ['Authorization: ********'],
        secret: 'whsec_********',
      },
      {
        name: 'mail',
        type: 'email',
        createdUTC: expect.stringMatching(/Z$/),
        target: 'ops@example.test',
        to: ['ops@example.test'],
      },
    ]);
    const entries = await audit('channel.create');
    expect(entries.map((e: { target: string }) => e.target)).toEqual(['mail', 'hook']);
    expect(entries[1]).toMatchObject({
      actor: 'token:automation',
      action: 'channel.create',
      target: 'hook',
      after: { name: 'hook', type: 'webhook', headers: ['Authorization: ********'] },
    });
    expect(entries[1].before).toBeUndefined();
    const shown = JSON.stringify({ listed, entries });
    for (const secret of [created.secret, 'q-s3cret', 'hdr-s3cret']) expect(shown).not.toContain(secret);
  });

  it('refuses channel attributes by code: type, a missing or misplaced field, bad input, an internal address, a taken name', async () => {
    expect(await refusal('/channels/create', { name: 'x', type: 'pager', url: 'https://a.test/' })).toEqual([
      400,
      'INVALID_ATTRIBUTE',
      'type',
    ]);
    expect(await refusal('/channels/create', { name: 'x', type: 'webhook' })).toEqual([
      400,
      'MISSING_ATTRIBUTE',
      'url',
    ]);
    expect(await refusal('/channels/create', { name: 'x', type: 'email' })).toEqual([
      400,
      'MISSING_ATTRIBUTE',
      'to',
    ]);
    expect(
      await refusal('/channels/create', {
        name: 'x',
        type: 'email',
        to: ['a@b.test'],
        url: 'https://a.test/',
      }),
    ).toEqual([400, 'INVALID_ATTRIBUTE', 'url']);
    expect(
      await refusal('/channels/create', { name: 'x', type: 'slack', url: 'https://a.test/', to: 'a@b.test' }),
    ).toEqual([400, 'INVALID_ATTRIBUTE', 'to']);
    expect(await refusal('/channels/create', { name: 'x', type: 'email', to: ['not-an-address'] })).toEqual([
      400,
      'INVALID_INPUT',
      undefined,
    ]);
    expect(await refusal('/channels/create', { name: 'bad name', type: 'email', to: ['a@b.test'] })).toEqual([
      400,
      'INVALID_INPUT',
      undefined,
    ]);
    expect(
      await refusal('/channels/create', {
        name: 'x',
        type: 'webhook',
        url: 'https://a.test/',
        headers: { 'webhook-id': '1' },
      }),
    ).toEqual([400, 'INVALID_INPUT', undefined]);
    expect(
      await refusal('/channels/create', { name: 'x', type: 'webhook', url: 'http://169.254.169.254/latest' }),
    ).toEqual([400, 'ADDRESS_NOT_ALLOWED', undefined]);
    expect(await refusal('/channels/create', { name: 'mail', type: 'email', to: ['a@b.test'] })).toEqual([
      409,
      'ALREADY_EXISTS',
      undefined,
    ]);
    expect(
      await refusal('/channels/create', { name: 'x', type: 'email', to: ['a@b.test'], secret: 'whsec_x' }),
    ).toEqual([400, 'INVALID_ATTRIBUTE', 'secret']);
    expect((await ok('/channels/list', {})).map((c: { name: string }) => c.name)).toEqual(['hook', 'mail']);
  });

  it('rotates a webhook secret, answered once and signing beside the old one, audited without it', async () => {
    const receiver = await startHttpReceiver();
    const { secret } = await ok('/channels/create', { name: 'rotating', type: 'webhook', url: receiver.url });
    const rotated = await ok('/channels/rotateSecret', { name: 'rotating' });
    expect(rotated).toEqual({
      name: 'rotating',
      type: 'webhook',
      secret: expect.stringMatching(/^whsec_/),
      previousValidUntilUTC: expect.stringMatching(/Z$/),
    });
    expect(rotated.secret).not.toBe(secret);
    receiver.secrets = [rotated.secret, secret];
    expect((await ok('/channels/test', { name: 'rotating' })).ok).toBe(true);
    expect(receiver.requests[0]?.headers['webhook-signature']).toMatch(/^v1,\S+ v1,\S+$/);
    expect(receiver.requests[0]?.verifiedWith).toBe(0);
    const [entry] = await audit('channel.rotate-secret');
    expect(entry).toMatchObject({
      action: 'channel.rotate-secret',
      target: 'rotating',
      details: { previousValidUntilUTC: rotated.previousValidUntilUTC },
    });
    expect(JSON.stringify(entry)).not.toContain(rotated.secret);

    expect(await refusal('/channels/rotateSecret', { name: 'mail' })).toEqual([
      400,
      'INVALID_INPUT',
      undefined,
    ]);
    expect(await refusal('/channels/rotateSecret', { name: 'nope' })).toEqual([
      404,
      'CHANNEL_NOT_FOUND',
      undefined,
    ]);
    expect(await refusal('/channels/rotateSecret', {})).toEqual([400, 'MISSING_ATTRIBUTE', 'name']);
  });

  it("tests a channel now and answers the receiver's answer, delivered or not, audited", async () => {
    const receiver = await startHttpReceiver();
    const { secret } = await ok('/channels/create', {
      name: 'tested',
      type: 'webhook',
      url: `${receiver.url}/t`,
    });
    receiver.secrets = [secret];
    receiver.respond = () => ({ status: 200, body: 'thanks' });
    const delivered = await ok('/channels/test', { name: 'tested' });
    expect(delivered).toEqual({
      channel: 'tested',
      ok: true,
      status: 200,
      answer: 'HTTP 200 thanks',
      body: 'thanks',
      notificationId: expect.stringMatching(/^test_[0-9a-f]{32}$/),
      ms: expect.any(Number),
    });
    expect(receiver.requests[0]).toMatchObject({ path: '/t', verifiedWith: 0 });
    expect(receiver.requests[0]?.json).toMatchObject({ type: 'test', environment: 'acme' });
    expect(receiver.requests[0]?.headers['webhook-id']).toBe(delivered.notificationId);

    receiver.respond = () => ({ status: 404 });
    const failed = await ok('/channels/test', { name: 'tested' });
    expect(failed).toMatchObject({ channel: 'tested', ok: false, status: 404 });
    expect(failed.answer).toMatch(/^HTTP 404/);

    const entries = await audit('channel.test', { target: 'tested' });
    expect(entries.map((e: { details: unknown }) => e.details)).toEqual([
      { ok: false, status: 404, notificationId: failed.notificationId },
      { ok: true, status: 200, notificationId: delivered.notificationId },
    ]);
    // The attempts are in the delivery log like any other.
    const log = await ok('/notifications/log', { limit: 2 });
    expect(
      log.map((a: { notificationId: string; outcome: string }) => [a.notificationId, a.outcome]),
    ).toEqual([
      [failed.notificationId, 'failed'],
      [delivered.notificationId, 'delivered'],
    ]);
    expect(await refusal('/channels/test', { name: 'nope' })).toEqual([404, 'CHANNEL_NOT_FOUND', undefined]);
  });

  it('creates, lists and deletes routes with label filters; a channel in use is not deleted', async () => {
    const route = await ok('/routes/create', {
      name: 'night',
      channels: ['mail'],
      category: 'Sensors',
      minStatus: 'ERROR',
      device: 'hall-*',
      labels: { site: 'amsterdam', customer: 'acme' },
      includeSuccess: true,
      remindEvery: '1h',
      quietHours: '22:00-07:00',
      timeZone: 'Europe/Amsterdam',
    });
    const expected = {
      name: 'night',
      channels: ['mail'],
      filter:
        'Sensors, ERROR and above, device hall-*, labels customer=acme site=amsterdam, with returns to SUCCESS',
      labels: { customer: 'acme', site: 'amsterdam' },
      remindEvery: 3_600_000,
      quietHours: '22:00-07:00 Europe/Amsterdam',
      createdUTC: expect.stringMatching(/Z$/),
    };
    expect(route).toEqual(expected);
    expect(await ok('/routes/list', {})).toEqual([expected]);
    const [created] = await audit('route.create');
    expect(created).toMatchObject({
      action: 'route.create',
      target: 'night',
      after: { labels: expected.labels },
    });

    expect(await refusal('/channels/delete', { name: 'mail' })).toEqual([409, 'IN_USE', undefined]);
    expect(await ok('/routes/delete', { name: 'night' })).toEqual({ name: 'night', deleted: true });
    const [deleted] = await audit('route.delete');
    expect(deleted).toMatchObject({ target: 'night', before: { name: 'night', channels: ['mail'] } });
    expect(deleted.after).toBeUndefined();
    expect(await refusal('/routes/delete', { name: 'night' })).toEqual([404, 'ROUTE_NOT_FOUND', undefined]);

    expect(await ok('/channels/delete', { name: 'mail' })).toEqual({ name: 'mail', deleted: true });
    const [gone] = await audit('channel.delete');
    expect(gone).toMatchObject({ target: 'mail', before: { name: 'mail', type: 'email' } });
    expect(await refusal('/channels/delete', { name: 'mail' })).toEqual([
      404,
      'CHANNEL_NOT_FOUND',
      undefined,
    ]);
  });

  it('refuses route attributes by code', async () => {
    const base = { name: 'r', channels: ['hook'] };
    expect(await refusal('/routes/create', { name: 'r' })).toEqual([400, 'MISSING_ATTRIBUTE', 'channels']);
    expect(await refusal('/routes/create', { ...base, minStatus: 'LOUD' })).toEqual([
      400,
      'INVALID_ATTRIBUTE',
      'minStatus',
    ]);
    expect(await refusal('/routes/create', { ...base, labels: ['site'] })).toEqual([
      400,
      'INVALID_ATTRIBUTE',
      'labels',
    ]);
    expect(await refusal('/routes/create', { ...base, labels: { '9site': 'x' } })).toEqual([
      400,
      'INVALID_INPUT',
      undefined,
    ]);
    expect(await refusal('/routes/create', { ...base, quietHours: '25:00-07:00' })).toEqual([
      400,
      'INVALID_INPUT',
      undefined,
    ]);
    expect(await refusal('/routes/create', { ...base, remindEvery: '10s' })).toEqual([
      400,
      'INVALID_INPUT',
      undefined,
    ]);
    expect(await refusal('/routes/create', { ...base, channels: ['ghost'] })).toEqual([
      404,
      'CHANNEL_NOT_FOUND',
      undefined,
    ]);
    expect(await ok('/routes/list', {})).toEqual([]);
  });

  it('sends an event of a device labelled site=amsterdam to a route filtered on it, and not one of site=delft', async () => {
    const receiver = await startHttpReceiver();
    const { secret } = await ok('/channels/create', { name: 'ams-hook', type: 'webhook', url: receiver.url });
    receiver.secrets = [secret];
    for (const [deviceName, site] of [
      ['freezer-ams', 'amsterdam'],
      ['freezer-delft', 'delft'],
    ] as const) {
      await ok('/devices/create', {
        deviceName,
        definitionName: 'ComfortSensors',
        definitionIsPublic: false,
        labels: { site, customer: 'acme' },
      });
    }
    await ok('/routes/create', { name: 'amsterdam', channels: ['ams-hook'], labels: { site: 'amsterdam' } });
    // The delft event first: by the time amsterdam's is delivered, delft's was routed already.
    await emitEvents(pipe, [
      makeEvent('acme', { deviceName: 'freezer-delft' }),
      makeEvent('acme', { deviceName: 'freezer-ams' }),
    ]);
    await until(() => receiver.accepted().length > 0, "the amsterdam device's notification");
    await eventually(() => notificationsSettled(pipe), { message: 'nothing left to route or deliver' });
    expect(notifiedDevices(receiver)).toEqual(['freezer-ams']);
    expect(receiver.requests.every((r) => r.verifiedWith === 0)).toBe(true);

    // Labels are read as the device has them when its event is routed.
    await ok('/devices/update', { deviceName: 'freezer-delft', labels: { site: 'amsterdam' } });
    await eventually(
      async () => {
        await emitEvents(pipe, [makeEvent('acme', { deviceName: 'freezer-delft' })]);
        await eventually(() => notificationsSettled(pipe), { message: 'routed and delivered' });
        return notifiedDevices(receiver).includes('freezer-delft');
      },
      { message: 'the relabelled device notified (within the catalog cache time)' },
    );
    await ok('/routes/delete', { name: 'amsterdam' });
  });

  it('lists failed notifications, sends them again, and logs every attempt, audited', async () => {
    const receiver = await startHttpReceiver();
    const { secret } = await ok('/channels/create', {
      name: 'flaky',
      type: 'webhook',
      url: `${receiver.url}/f`,
    });
    receiver.secrets = [secret];
    receiver.respond = () => ({ status: 404, body: 'not here' }); // failed at once, no retries
    await ok('/routes/create', { name: 'failing', channels: ['flaky'], device: 'fail-*' });
    await emitEvents(pipe, [makeEvent('acme', { deviceName: 'fail-1' })]);
    const failed = await eventually(async () => ((await ok('/notifications/failed', {})) as unknown[])[0], {
      message: 'a failed notification',
    });
    expect(failed).toEqual({
      id: expect.stringMatching(/^event_/),
      kind: 'event',
      channel: 'flaky',
      deviceName: 'fail-1',
      sensorName: 'Temperature',
      createdUTC: expect.stringMatching(/Z$/),
      failedUTC: expect.stringMatching(/Z$/),
      attempts: 1,
      lastAnswer: expect.stringMatching(/^HTTP 404/),
    });
    const { id } = failed as { id: string };
    expect(await refusal('/notifications/retry', { ids: ['event_nope'] })).toEqual([
      404,
      'NOTIFICATION_NOT_FOUND',
      undefined,
    ]);
    expect(await refusal('/notifications/retry', { ids: [7] })).toEqual([400, 'INVALID_ATTRIBUTE', 'ids']);

    receiver.respond = () => ({ status: 200 });
    expect(await ok('/notifications/retry', { ids: [id] })).toEqual({ retried: [id] });
    await until(() => receiver.accepted().length > 0, 'the notification sent again');
    await eventually(() => notificationsSettled(pipe), { message: 'nothing left to deliver' });
    expect(await ok('/notifications/failed', {})).toEqual([]);
    const [entry] = await audit('notification.retry');
    expect(entry).toMatchObject({
      actor: 'token:automation',
      target: id,
      details: { channel: 'flaky', kind: 'event' },
    });
    // Nothing failed is left: retrying all is no change.
    expect(await ok('/notifications/retry', {})).toEqual({ retried: [] });
    expect(await audit('notification.retry')).toHaveLength(1);

    const attempts = await eventually(
      async () => {
        const log = (await ok('/notifications/log', {})) as { notificationId: string; outcome: string }[];
        return log.filter((a) => a.notificationId === id);
      },
      { until: (a) => a.length === 2, message: 'both attempts in the log' },
    );
    expect(attempts.map((a) => a.outcome)).toEqual(['delivered', 'failed']);
    expect(attempts[1]).toMatchObject({
      channel: 'flaky',
      channelType: 'webhook',
      kind: 'event',
      attempt: 1,
    });
    expect(await ok('/notifications/log', { limit: 1 })).toHaveLength(1);
    expect(await refusal('/notifications/log', { limit: 0 })).toEqual([400, 'INVALID_ATTRIBUTE', 'limit']);
    await ok('/routes/delete', { name: 'failing' });
  });

  it('answers 403 FORBIDDEN to tokens without scope admin, and 405 to GET', async () => {
    for (const token of [operator, reader]) {
      for (const path of PATHS) {
        const r = await post(path, token, {});
        expect([path, r.status, r.json.error.code]).toEqual([path, 403, 'FORBIDDEN']);
      }
    }
    const get = await call(api, '/channels/list', { token: admin });
    expect([get.status, get.json.error.code]).toEqual([405, 'METHOD_NOT_ALLOWED']);
  });

  it("never reaches another environment's channels, routes or notifications (404, as if they did not exist)", async () => {
    await ok('/routes/create', { name: 'mine', channels: ['hook'] });
    for (const [path, body, code] of [
      ['/channels/delete', { name: 'hook' }, 'CHANNEL_NOT_FOUND'],
      ['/channels/rotateSecret', { name: 'hook' }, 'CHANNEL_NOT_FOUND'],
      ['/channels/test', { name: 'hook' }, 'CHANNEL_NOT_FOUND'],
      ['/routes/create', { name: 'theirs', channels: ['hook'] }, 'CHANNEL_NOT_FOUND'],
      ['/routes/delete', { name: 'mine' }, 'ROUTE_NOT_FOUND'],
      ['/notifications/retry', { ids: ['event_0123'] }, 'NOTIFICATION_NOT_FOUND'],
    ] as const) {
      expect([path, ...(await refusal(path, body, otherAdmin))]).toEqual([path, 404, code, undefined]);
    }
    for (const path of ['/channels/list', '/routes/list', '/notifications/failed', '/notifications/log'])
      expect([path, await ok(path, {}, otherAdmin)]).toEqual([path, []]);
    expect((await ok('/routes/list', {})).map((r: { name: string }) => r.name)).toEqual(['mine']);
    expect(await audit('channel', { env: 'other' })).toEqual([]);
    expect(await audit('route', { env: 'other' })).toEqual([]);
    await ok('/routes/delete', { name: 'mine' });
  });

  it('describes every operation in the OpenAPI document, POST only', async () => {
    const doc = (await call(api, '/openapi.json')).json;
    for (const path of PATHS) {
      expect([path, Object.keys(doc.paths[path])]).toEqual([path, ['post']]);
      expect(doc.paths[path].post.security).toEqual([{ bearer: [] }]);
    }
    const route = doc.paths['/routes/create'].post.requestBody.content['application/json'].schema;
    expect(route.properties.labels).toBeDefined();
    expect(doc.paths['/channels/delete'].post.responses['409']).toBeDefined();
  });
});
