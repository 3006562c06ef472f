/**
 * The console's management pages over plain HTTP (their browser tests are in
 * console-manage.test.ts), on the api role that `startVigil` serves: every form refuses a post
 * without its session's token or from another origin (403 CSRF_REJECTED) and changes nothing; a
 * viewer and an operator get 403 FORBIDDEN on every management page and form and see no Manage
 * link or admin button; an admin's refused form comes back with the error's code and the input
 * kept, a success redirects with a message shown once and is in the audit log; a stale revision is
 * a CONFLICT shown with the current values; the last admin cannot be demoted; tokens, users,
 * channels (a test notification's answer shown) and routes (with a label filter) are made and
 * removed through their forms; a device's rules say where it overrides its definition; the events
 * page filters by label; an API key's auto-create rule is set with the key, changed on its revision
 * and cleared.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import { ALERTING_TEST_CONFIG } from '../support/alerting.ts';
import { eventually } from '../support/eventually.ts';
import { startHttpReceiver } from '../support/receivers.ts';
import { startApiHarness, type ApiHarness } from './api-harness.ts';
import { consoleClient, formToken, signIn } from './console-client.ts';

const PASSWORD = 'correct horse battery';

let h: ApiHarness;
let api: string;
let keyId: string;
let tokenId: string;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  h = await startApiHarness({ roles: 'api', consoleSignInPerMinute: 1000, ...ALERTING_TEST_CONFIG }, (fn) =>
    cleanups.push(fn),
  );
  await h.seedEnvironment('acme');
  await h.admin.createUser('acme', 'ada', PASSWORD, 'admin');
  await h.admin.createUser('acme', 'olga', PASSWORD, 'operator');
  await h.admin.createUser('acme', 'vera', PASSWORD, 'viewer');
  keyId = (await h.admin.createApiKey('acme', 'site-a')).id;
  tokenId = (await h.admin.createToken('acme', 'ci', 0, ['read'])).id;
  const vigil = await startVigil(h.config, createLogger('silent'));
  cleanups.push(() => vigil.close());
  api = `http://127.0.0.1:${vigil.ports.api}`;
});

afterAll(async () => {
  for (const fn of cleanups.reverse()) await fn();
});

/** A client signed in as `username`, with the session's anti-forgery token. */
async function session(username: string, headers: Record<string, string> = {}) {
  const c = consoleClient(api, headers);
  await signIn(c, 'acme', username, PASSWORD);
  const csrf = await formToken(await c.get('/console/fleet'));
  return { c, csrf };
}

/** Every form of the management pages, with fields it would take. */
const FORMS: [string, Record<string, string>][] = [
  ['/console/manage/devices/new', { deviceName: 'probe-x', definition: 'private:ComfortSensors' }],
  [
    '/console/manage/devices/device_1_hallway/edit',
    { displayName: 'Changed', definition: 'private:ComfortSensors' },
  ],
  ['/console/manage/devices/device_3_reception/delete', {}],
  [
    '/console/manage/devices/import',
    { action: 'import', csv: 'deviceName,definitionName\nprobe-y,ComfortSensors\n' },
  ],
  ['/console/manage/api-keys/create', { name: 'probe-key' }],
  ['/console/manage/api-keys/rotate', { id: 'KEY', overlapMinutes: '60' }],
  ['/console/manage/api-keys/KEY/revoke', {}],
  [
    '/console/manage/api-keys/KEY/auto-create',
    { autoCreateDefinition: 'private:ComfortSensors', autoCreateMax: '5' },
  ],
  ['/console/manage/tokens/create', { name: 'probe-token', scopes: 'read', expiresInDays: '30' }],
  ['/console/manage/tokens/TOKEN/revoke', {}],
  ['/console/manage/users/create', { username: 'probe-user', password: PASSWORD, role: 'viewer' }],
  ['/console/manage/users/role', { username: 'olga', role: 'viewer' }],
  ['/console/manage/users/disable', { username: 'olga' }],
  ['/console/manage/users/enable', { username: 'olga' }],
  ['/console/manage/users/reset-mfa', { username: 'olga' }],
  ['/console/manage/users/olga/delete', {}],
  ['/console/manage/alerting/channels/create', { name: 'probe-mail', type: 'email', to: 'ops@example.com' }],
  ['/console/manage/alerting/channels/test', { name: 'probe-mail' }],
  ['/console/manage/alerting/channels/probe-mail/delete', {}],
  ['/console/manage/alerting/routes/create', { name: 'probe-route', channels: 'probe-mail' }],
  ['/console/manage/alerting/routes/probe-route/delete', {}],
  [
    '/console/devices/device_1_hallway/rules/CO2',
    { ruleStatus: 'WARNING', ruleCondition: 'above', ruleValue: '890' },
  ],
  ['/console/devices/device_1_hallway/rules/CO2/clear', {}],
];
const formPath = (p: string) => p.replace('KEY', keyId).replace('TOKEN', tokenId);

/** Every management page (GET). */
const PAGES = [
  '/console/manage',
  '/console/manage/devices',
  '/console/manage/devices/new',
  '/console/manage/devices/device_1_hallway/edit',
  '/console/manage/devices/device_1_hallway/delete',
  '/console/manage/devices/import',
  '/console/manage/devices/export.csv',
  '/console/manage/api-keys',
  '/console/manage/api-keys/KEY/revoke',
  '/console/manage/api-keys/KEY/auto-create',
  '/console/manage/tokens',
  '/console/manage/tokens/TOKEN/revoke',
  '/console/manage/users',
  '/console/manage/users/olga/delete',
  '/console/manage/alerting',
  '/console/manage/alerting/channels/probe-mail/delete',
  '/console/manage/alerting/routes/probe-route/delete',
  '/console/manage/audit',
  '/console/devices/device_1_hallway/rules/CO2',
];

const store = () => createTenancyStore({ redis: h.redis, keys: h.keys });

/** What nothing refused above may have changed. */
async function unchanged(): Promise<void> {
  expect((await store().listDevices('acme')).map((x) => x.deviceName)).toEqual([
    'device_1_hallway',
    'device_2_rd_office',
    'device_3_reception',
  ]);
  expect((await store().getDevice('acme', 'device_1_hallway'))?.displayName).toBe('Hallway');
  expect(await store().getThresholdOverrides('acme', 'device_1_hallway')).toEqual(new Map());
  const keys = await h.admin.listApiKeys('acme');
  expect([keys.length, keys.every((k) => k.expiresUTC === null && k.autoCreate === null)]).toEqual([2, true]);
  expect((await h.admin.listTokens('acme')).map((t) => t.name).sort()).toEqual(['ci', 'test']);
  const users = await h.admin.listUsers('acme');
  expect(users.map((u) => [u.username, u.role, u.disabled])).toEqual([
    ['ada', 'admin', false],
    ['olga', 'operator', false],
    ['vera', 'viewer', false],
  ]);
}

const errorCode = (text: string) => /<span class="code[^"]*">([A-Z_]+)<\/span>/.exec(text)?.[1];

describe('console management over HTTP', () => {
  it('refuses every form without its session’s token, or from another origin, and changes nothing', async () => {
    const { c, csrf } = await session('ada');
    for (const [path, fields] of FORMS) {
      const res = await c.post(formPath(path), fields);
      const text = await res.text();
      expect([res.status, errorCode(text)], path).toEqual([403, 'CSRF_REJECTED']);
    }
    // The session's cookie and token, sent from another site.
    const evil = consoleClient(api, { origin: 'http://evil.example' });
    for (const [k, v] of c.jar) evil.jar.set(k, v);
    for (const [path, fields] of FORMS) {
      const res = await evil.post(formPath(path), { ...fields, _csrf: csrf });
      expect([res.status, errorCode(await res.text())], path).toEqual([403, 'CSRF_REJECTED']);
    }
    // Another session's token is not this one's.
    const other = await session('ada');
    expect(other.csrf).not.toBe(csrf);
    const res = await c.post('/console/manage/devices/new', { ...FORMS[0]![1], _csrf: other.csrf });
    expect([res.status, errorCode(await res.text())]).toEqual([403, 'CSRF_REJECTED']);
    await unchanged();
  });

  it('gives a viewer and an operator 403 FORBIDDEN on every management page and form, and no Manage link or buttons', async () => {
    for (const username of ['vera', 'olga']) {
      const { c, csrf } = await session(username);
      for (const path of PAGES) {
        const res = await c.get(formPath(path));
        expect([res.status, errorCode(await res.text())], `${username} GET ${path}`).toEqual([
          403,
          'FORBIDDEN',
        ]);
      }
      for (const [path, fields] of FORMS) {
        const res = await c.post(formPath(path), { ...fields, _csrf: csrf });
        expect([res.status, errorCode(await res.text())], `${username} POST ${path}`).toEqual([
          403,
          'FORBIDDEN',
        ]);
      }
      for (const path of ['/console/fleet', '/console/devices/device_1_hallway', '/console/events']) {
        const text = await (await c.get(path)).text();
        expect(text, path).not.toContain('href="/console/manage');
        expect(text, path).not.toContain('/rules/');
        expect(text, path).not.toMatch(/New device|Edit device|Delete device|Override|Clear override/);
      }
      // They still see the device's rules.
      expect(await (await c.get('/console/devices/device_1_hallway')).text()).toContain('id="device-rules"');
    }
    await unchanged();
  });

  it('shows a refused form again with the error’s code and the input kept; a success redirects with a message shown once', async () => {
    const { c, csrf } = await session('ada');
    const taken = await c.post('/console/manage/devices/new', {
      _csrf: csrf,
      deviceName: 'device_1_hallway',
      displayName: 'My <b>second</b> hallway',
      definition: 'private:ComfortSensors',
      labelKey: 'site',
      labelValue: 'amsterdam',
    });
    const page = await taken.text();
    expect([taken.status, errorCode(page)]).toEqual([409, 'ALREADY_EXISTS']);
    expect(page).toContain('value="My &lt;b&gt;second&lt;/b&gt; hallway"');
    expect(page).toMatch(/name="labelKey" value="site"/);
    expect(page).toMatch(/name="labelValue" value="amsterdam"/);

    const badLabel = await c.post('/console/manage/devices/new', {
      _csrf: csrf,
      deviceName: 'freezer-7',
      definition: 'private:ComfortSensors',
      labelKey: '9site',
      labelValue: 'x',
    });
    expect([badLabel.status, errorCode(await badLabel.text())]).toEqual([400, 'INVALID_INPUT']);

    const created = await c.post('/console/manage/devices/new', {
      _csrf: csrf,
      deviceName: 'freezer-7',
      displayName: 'Freezer 7',
      definition: 'private:ComfortSensors',
      labelKey: 'site',
      labelValue: 'amsterdam',
      availabilityMinutes: '15',
    });
    expect([created.status, created.headers.get('location')]).toEqual([303, '/console/devices/freezer-7']);
    const first = await (await c.get('/console/devices/freezer-7')).text();
    expect(first).toContain('Device freezer-7 created.');
    expect(await (await c.get('/console/devices/freezer-7')).text()).not.toContain(
      'Device freezer-7 created.',
    );
    expect(await store().getDevice('acme', 'freezer-7')).toMatchObject({
      displayName: 'Freezer 7',
      labels: { site: 'amsterdam' },
      availabilityMinutes: 15,
    });
    const audit = await (await c.get('/console/manage/audit?action=device.create')).text();
    expect(audit).toContain('<span class="mono">ada</span>');
    expect(audit).toContain('freezer-7');
  });

  it('refuses an edit made on a revision someone changed meanwhile (409 CONFLICT), showing the current values', async () => {
    const { c, csrf } = await session('ada');
    const form = await (await c.get('/console/manage/devices/device_2_rd_office/edit')).text();
    const revision = /name="revision" value="(\d+)"/.exec(form)?.[1];
    expect(revision).toBeDefined();
    await h.admin.updateDevice('acme', 'device_2_rd_office', { displayName: 'Changed meanwhile' });
    const stale = await c.post('/console/manage/devices/device_2_rd_office/edit', {
      _csrf: csrf,
      revision: revision!,
      displayName: 'Mine',
      definition: 'private:ComfortSensors',
    });
    const page = await stale.text();
    expect([stale.status, errorCode(page)]).toEqual([409, 'CONFLICT']);
    expect(page).toContain('value="Changed meanwhile"');
    expect(page).toContain(`name="revision" value="${Number(revision) + 1}"`);
    expect((await store().getDevice('acme', 'device_2_rd_office'))?.displayName).toBe('Changed meanwhile');
    // Sent again on the current revision, it is saved.
    const again = await c.post('/console/manage/devices/device_2_rd_office/edit', {
      _csrf: csrf,
      revision: String(Number(revision) + 1),
      displayName: 'Mine',
      definition: 'private:ComfortSensors',
    });
    expect(again.status).toBe(303);
    expect((await store().getDevice('acme', 'device_2_rd_office'))?.displayName).toBe('Mine');
  });

  it('refuses to demote the last admin (409 LAST_ADMIN) on the users page', async () => {
    const { c, csrf } = await session('ada');
    const res = await c.post('/console/manage/users/role', { _csrf: csrf, username: 'ada', role: 'viewer' });
    const page = await res.text();
    expect([res.status, errorCode(page)]).toEqual([409, 'LAST_ADMIN']);
    expect(page).toContain('id="user-rows"');
    expect((await h.admin.listUsers('acme')).find((u) => u.username === 'ada')?.role).toBe('admin');
  });

  it('creates and revokes a service token, shown once; changes, disables, enables and deletes a user', async () => {
    const { c, csrf } = await session('ada');
    const created = await c.post('/console/manage/tokens/create', {
      _csrf: csrf,
      name: 'grafana',
      scopes: 'read',
      expiresInDays: '30',
    });
    const page = await created.text();
    expect(created.status).toBe(200);
    const token = /id="new-token" class="mono secret" type="text" value="([^"]+)"/.exec(page)?.[1];
    expect(token).toMatch(/^vt_/);
    const listed = await h.admin.listTokens('acme');
    const grafana = listed.find((t) => t.name === 'grafana');
    expect(grafana).toMatchObject({ scopes: ['read'] });
    expect(Date.parse(grafana?.expiresUTC ?? '') - Date.now()).toBeGreaterThan(29.9 * 86_400_000);
    expect(await (await c.get('/console/manage/tokens')).text()).not.toContain(token!);
    const badScopes = await c.post('/console/manage/tokens/create', {
      _csrf: csrf,
      name: 'x',
      scopes: 'write',
    });
    expect([badScopes.status, errorCode(await badScopes.text())]).toEqual([400, 'INVALID_ATTRIBUTE']);
    const revoked = await c.post(`/console/manage/tokens/${grafana!.id}/revoke`, { _csrf: csrf });
    expect([revoked.status, revoked.headers.get('location')]).toEqual([303, '/console/manage/tokens']);
    expect(await (await c.get('/console/manage/tokens')).text()).toContain('Token grafana revoked.');

    const user = await c.post('/console/manage/users/create', {
      _csrf: csrf,
      username: 'nina',
      password: PASSWORD,
      role: 'viewer',
    });
    expect(user.status).toBe(303);
    const rev = async () => (await h.admin.listUsers('acme')).find((u) => u.username === 'nina');
    const role = await c.post('/console/manage/users/role', {
      _csrf: csrf,
      username: 'nina',
      role: 'operator',
      revision: String((await rev())?.revision),
    });
    expect(role.status).toBe(303);
    expect(await rev()).toMatchObject({ role: 'operator' });
    const stale = await c.post('/console/manage/users/disable', {
      _csrf: csrf,
      username: 'nina',
      revision: '1',
    });
    expect([stale.status, errorCode(await stale.text())]).toEqual([409, 'CONFLICT']);
    for (const action of ['disable', 'enable']) {
      const res = await c.post(`/console/manage/users/${action}`, {
        _csrf: csrf,
        username: 'nina',
        revision: String((await rev())?.revision),
      });
      expect(res.status, action).toBe(303);
      expect((await rev())?.disabled, action).toBe(action === 'disable');
    }
    const taken = await c.post('/console/manage/users/create', {
      _csrf: csrf,
      username: 'nina',
      password: PASSWORD,
      role: 'viewer',
    });
    const takenPage = await taken.text();
    expect([taken.status, errorCode(takenPage)]).toEqual([409, 'ALREADY_EXISTS']);
    expect(takenPage).toContain('id="user-name" name="username" type="text" value="nina"');
    expect(takenPage).not.toContain(PASSWORD);
    const deleted = await c.post('/console/manage/users/nina/delete', { _csrf: csrf });
    expect(deleted.status).toBe(303);
    expect(await rev()).toBeUndefined();
  });

  it('creates a webhook channel (its secret shown once), sends it a test with the receiver’s answer, and routes by label', async () => {
    const receiver = await startHttpReceiver();
    receiver.respond = () => ({ status: 202, body: 'queued by the receiver' });
    const { c, csrf } = await session('ada');
    const created = await c.post('/console/manage/alerting/channels/create', {
      _csrf: csrf,
      name: 'hook',
      type: 'webhook',
      url: receiver.url,
      headers: 'X-Team: ops',
      to: '',
    });
    const page = await created.text();
    expect(created.status).toBe(200);
    expect(page).toMatch(/id="channel-secret" class="mono secret" type="text" value="whsec_[^"]+"/);
    const tested = await c.post('/console/manage/alerting/channels/test', { _csrf: csrf, name: 'hook' });
    const result = await tested.text();
    expect(tested.status).toBe(200);
    expect(result).toContain('Test notification to hook: accepted');
    expect(result).toContain('queued by the receiver');
    expect(receiver.requests).toHaveLength(1);
    expect(receiver.requests[0]?.headers['x-team']).toBe('ops');

    const route = await c.post('/console/manage/alerting/routes/create', [
      ['_csrf', csrf],
      ['name', 'amsterdam'],
      ['channels', 'hook'],
      ['minStatus', 'WARNING'],
      ['labelKey', 'site'],
      ['labelValue', 'amsterdam'],
      ['labelKey', ''],
      ['labelValue', ''],
      ['remindEvery', ''],
    ]);
    expect(route.status).toBe(303);
    const listed = await (await c.get('/console/manage/alerting')).text();
    expect(listed).toMatch(
      /<tr data-key="amsterdam">[\s\S]*<span class="label-k">site<\/span>=<span class="label-v">amsterdam<\/span>/,
    );
    const inUse = await c.post('/console/manage/alerting/channels/hook/delete', { _csrf: csrf });
    expect([inUse.status, errorCode(await inUse.text())]).toEqual([409, 'IN_USE']);
    expect((await c.post('/console/manage/alerting/routes/amsterdam/delete', { _csrf: csrf })).status).toBe(
      303,
    );
    expect((await c.post('/console/manage/alerting/channels/hook/delete', { _csrf: csrf })).status).toBe(303);
    const audit = await (await c.get('/console/manage/audit?actor=ada&action=channel')).text();
    for (const action of ['channel.create', 'channel.test', 'channel.delete'])
      expect(audit, action).toContain(`<span class="tag action">${action}</span>`);
    expect(audit).not.toContain('whsec_');
  });

  it('shows on the device page where it overrides its definition, and edits and clears the override', async () => {
    const { c, csrf } = await session('ada');
    // Two rows of the form, the second left blank.
    const set = await c.post('/console/devices/device_1_hallway/rules/Temperature', [
      ['_csrf', csrf],
      ['revision', '0'],
      ['ruleStatus', 'WARNING'],
      ['ruleStatus', 'CRITICAL'],
      ['ruleCondition', 'above'],
      ['ruleCondition', 'above'],
      ['ruleValue', '26'],
      ['ruleValue', ''],
      ['ruleFor', '10m'],
      ['ruleFor', ''],
      ['ruleDescription', ''],
      ['ruleDescription', ''],
      ['hysteresis', '0.5'],
      ['staleAfter', ''],
      ['staleStatus', 'WARNING'],
    ]);
    expect([set.status, set.headers.get('location')]).toEqual([
      303,
      '/console/devices/device_1_hallway#device-rules',
    ]);
    const page = await (await c.get('/console/devices/device_1_hallway')).text();
    const row = /<tr data-key="Temperature" data-applies="override">[\s\S]*?<\/tr>/.exec(page)?.[0] ?? '';
    expect(row).toContain('Device override');
    expect(row).toContain('above 26 for 10m');
    expect(row).toContain('hysteresis 0.5');
    expect(page).toMatch(/<tr data-key="Humidity" data-applies="definition">/);
    // A stale revision: the rules as they are, with the code.
    const stale = await c.post('/console/devices/device_1_hallway/rules/Temperature', {
      _csrf: csrf,
      revision: '0',
      ruleStatus: 'WARNING',
      ruleCondition: 'above',
      ruleValue: '30',
    });
    const stalePage = await stale.text();
    expect([stale.status, errorCode(stalePage)]).toEqual([409, 'CONFLICT']);
    expect(stalePage).toContain('name="revision" value="1"');
    expect(stalePage).toMatch(/name="ruleValue" value="26"/);
    const cleared = await c.post('/console/devices/device_1_hallway/rules/Temperature/clear', {
      _csrf: csrf,
    });
    expect(cleared.status).toBe(303);
    expect(await (await c.get('/console/devices/device_1_hallway')).text()).toMatch(
      /<tr data-key="Temperature" data-applies="definition">/,
    );
  });

  it('filters the events page by the devices’ labels', async () => {
    await h.admin.updateDevice('acme', 'device_3_reception', { labels: { site: 'utrecht' } });
    for (const deviceName of ['device_1_hallway', 'device_3_reception'])
      await h.addEvent({
        env: 'acme',
        deviceName,
        displayName: deviceName,
        sensorName: 'Temperature',
        sensorType: 'tempC',
        sensorValue: 26,
        eventCategory: 'Sensors',
        eventStatus: 'WARNING',
        eventMessage: 'Temperature - Above 25 °C - WARNING - 26.0 °C',
        receivedMs: Date.now() - 1000,
      });
    const { c } = await session('vera');
    // The fleet the page filters by is read again within the live interval.
    const page = await eventually(async () => (await c.get('/console/events?labels=site%3Dutrecht')).text(), {
      until: (text) => text.includes('href="/console/devices/device_3_reception"'),
      message: 'the reception’s event on the events page filtered by site=utrecht',
    });
    expect(page).not.toContain('href="/console/devices/device_1_hallway"');
    expect(page).toContain('value="site=utrecht"');
    const fleet = await (await c.get('/console/fleet?labels=site%3Dutrecht')).text();
    expect(fleet.match(/<tr data-key="[^"]+"/g)).toEqual(['<tr data-key="device_3_reception"']);
  });

  it('sets an API key’s auto-create rule with the key, changes it on its revision and clears it', async () => {
    const { c, csrf } = await session('ada');
    const created = await c.post('/console/manage/api-keys/create', {
      _csrf: csrf,
      name: 'ttn',
      autoCreateDefinition: 'private:ComfortSensors',
      labelKey: 'site',
      labelValue: 'dock',
      autoCreateMax: '5',
    });
    expect(created.status).toBe(200);
    expect(await created.text()).toContain('0 of 5 created');
    const key = (await h.admin.listApiKeys('acme')).find((k) => k.name === 'ttn');
    expect(key).toMatchObject({
      autoCreate: { definitionName: 'ComfortSensors', labels: { site: 'dock' }, maxDevices: 5 },
      revision: 1,
    });
    const path = `/console/manage/api-keys/${key?.id ?? ''}/auto-create`;

    const badMax = await c.post('/console/manage/api-keys/create', {
      _csrf: csrf,
      name: 'ttn-2',
      autoCreateDefinition: 'private:ComfortSensors',
      autoCreateMax: '0',
    });
    const badPage = await badMax.text();
    expect([badMax.status, errorCode(badPage)]).toEqual([400, 'INVALID_ATTRIBUTE']);
    expect(badPage).toContain('value="ttn-2"');

    const form = await (await c.get(path)).text();
    expect(form).toContain('name="revision" value="1"');
    await h.admin.updateApiKey('acme', 'ttn', {
      autoCreate: { definitionName: 'ComfortSensors', maxDevices: 7 },
    });
    const stale = await c.post(path, {
      _csrf: csrf,
      revision: '1',
      autoCreateDefinition: 'private:ComfortSensors',
      autoCreateMax: '9',
    });
    const stalePage = await stale.text();
    expect([stale.status, errorCode(stalePage)]).toEqual([409, 'CONFLICT']);
    expect(stalePage).toContain('value="7"');
    const changed = await c.post(path, {
      _csrf: csrf,
      revision: '2',
      autoCreateDefinition: 'private:ComfortSensors',
      autoCreateMax: '9',
    });
    expect([changed.status, changed.headers.get('location')]).toEqual([303, '/console/manage/api-keys']);
    expect((await h.admin.getApiKey('acme', 'ttn')).autoCreate).toMatchObject({ maxDevices: 9 });

    const cleared = await c.post(path, { _csrf: csrf, revision: '3', autoCreateDefinition: '' });
    expect(cleared.status).toBe(303);
    expect((await h.admin.getApiKey('acme', 'ttn')).autoCreate).toBeNull();
    const audit = await (await c.get('/console/manage/audit?action=apikey.update')).text();
    expect(audit).toContain('<span class="mono">ada</span>');
  });
});
