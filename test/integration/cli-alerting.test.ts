/**
 * The alerting commands as an operator runs them (`vigil channel|route|notify`, and channels and
 * routes in `vigil provision apply`): secrets shown once and stored only encrypted, listings
 * masked, internal addresses refused, bad input refused with one line, provisioning idempotent.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createSecretBox } from '../../src/alerting/secret-box.ts';
import { createKeys } from '../../src/keys.ts';
import { TEST_SECRETS_KEY } from '../support/alerting.ts';
import { RECEIVER_ALLOW_LIST, startHttpReceiver } from '../support/receivers.ts';
import { CLI_TEST_TIMEOUT_MS, createCliHarness, type CliHarness, type CliResult } from './cli-run.ts';

// Each test starts `vigil` processes one after another, a Node start each: on a loaded machine
// that is minutes of bounded work, not a wait.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

let cli: CliHarness;
let dir: string;
const KEYED = { VIGIL_SECRETS_KEY: TEST_SECRETS_KEY, VIGIL_NOTIFY_ALLOWED_HOSTS: RECEIVER_ALLOW_LIST };

type Run = () => Promise<CliResult>;

/** Runs commands three at a time: a process each, on a machine that may be busy. */
async function runAll(runs: Run[]): Promise<CliResult[]> {
  const results: CliResult[] = [];
  for (let i = 0; i < runs.length; i += 3)
    results.push(...(await Promise.all(runs.slice(i, i + 3).map((r) => r()))));
  return results;
}

function expectRefusal(r: { code: number; stderr: string }, reason: RegExp, code = 1) {
  expect(r.code, r.stderr).toBe(code);
  expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(r.stderr).toMatch(reason);
}

beforeAll(async () => {
  cli = createCliHarness(KEYED);
  dir = mkdtempSync(join(tmpdir(), 'vigil-cli-alerting-'));
  expect((await cli.run(['env', 'create', 'acme'])).code).toBe(0);
});

afterAll(async () => {
  await cli.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('vigil channel', () => {
  it('refuses to create a channel without VIGIL_SECRETS_KEY', async () => {
    const r = await cli.run(
      ['channel', 'create', '--env', 'acme', '--name', 'x', '--type', 'email', '--to', 'a@example.test'],
      { VIGIL_SECRETS_KEY: '' },
    );
    expectRefusal(r, /VIGIL_SECRETS_KEY is not set/);
  });

  it('prints a webhook secret once, stores secrets encrypted, and masks them in listings', async () => {
    const receiver = await startHttpReceiver();
    const created = await cli.json<Record<string, string>>([
      ...['channel', 'create', '--env', 'acme', '--name', 'hook', '--type', 'webhook'],
      ...['--url', `${receiver.url}/in`, '--header', 'Authorization: Bearer hdr-s3cret-value'],
    ]);
    expect(Object.keys(created).sort()).toEqual(['name', 'secret', 'type']);
    expect(created).toMatchObject({ name: 'hook', type: 'webhook' });
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const slackUrl = `${receiver.url}/services/T01/B02/slack-t0ken-value`;
    expect(
      (
        await cli.run([
          'channel',
          'create',
          '--env',
          'acme',
          '--name',
          'chat',
          '--type',
          'slack',
          '--url',
          slackUrl,
        ])
      ).code,
    ).toBe(0);

    const listing = await cli.run(['channel', 'list', '--env', 'acme']);
    const listingJson = await cli.run(['channel', 'list', '--env', 'acme', '--json']);
    const stored = JSON.stringify(await cli.snapshot());
    for (const secret of [created.secret ?? '', 'hdr-s3cret-value', 'slack-t0ken-value']) {
      expect(listing.stdout).not.toContain(secret);
      expect(listingJson.stdout).not.toContain(secret);
      expect(stored).not.toContain(secret);
    }
    expect(listing.stdout).toContain('Authorization: ********');
    expect(stored).toContain('aes256gcm:');

    receiver.secrets = [created.secret ?? ''];
    receiver.respond = () => ({ status: 200, body: 'thanks from the receiver' });
    const test = await cli.run(['channel', 'test', '--env', 'acme', '--name', 'hook']);
    expect(test.code, test.stderr).toBe(0);
    expect(test.stdout).toMatch(/^delivered: HTTP 200 thanks from the receiver \(\d+ ms\)/);
    expect(receiver.requests[0]?.verifiedWith).toBe(0);
    expect(receiver.requests[0]?.json).toMatchObject({ type: 'test', environment: 'acme' });
    expect(receiver.requests[0]?.headers.authorization).toBe('Bearer hdr-s3cret-value');
    const log = await cli.json<{ kind: string; outcome: string; status: number }[]>([
      'notify',
      'log',
      '--env',
      'acme',
    ]);
    expect(log[0]).toMatchObject({ kind: 'test', outcome: 'delivered', status: 200 });

    receiver.respond = () => ({ status: 404 });
    const failedTest = await cli.run(['channel', 'test', '--env', 'acme', '--name', 'chat']);
    expect(failedTest.code).toBe(1);
    expect(failedTest.stdout).toMatch(/^failed: HTTP 404/);

    const rotated = await cli.json<{ secret: string }>([
      'channel',
      'rotate-secret',
      '--env',
      'acme',
      '--name',
      'hook',
    ]);
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.secret).not.toBe(created.secret);
    expectRefusal(
      await cli.run(['channel', 'rotate-secret', '--env', 'acme', '--name', 'chat']),
      /only webhook channels/,
    );
  });

  it("keeps a webhook URL's user, password and query encrypted and masked, and still delivers with them", async () => {
    const receiver = await startHttpReceiver();
    const base = `127.0.0.1:${receiver.port}/in`;
    const url = `http://hook-user:pa55-w0rd@${base}?token=q-s3cret-value&team=ops`;
    const created = await cli.json<{ secret: string }>([
      ...['channel', 'create', '--env', 'acme', '--name', 'credhook', '--type', 'webhook', '--url', url],
    ]);
    // A channel an older Vigil stored with its URL in clear keeps working, and is sealed on its next write.
    const legacyUrl = `http://${base}?key=legacy-s3cret`;
    const legacySecret = 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw';
    await cli.redis.hset(
      createKeys(cli.prefix).channels('acme'),
      'legacy',
      JSON.stringify({
        id: 'a1b2c3d4e5f6',
        name: 'legacy',
        type: 'webhook',
        createdUTC: new Date().toISOString(),
        url: legacyUrl,
        headers: [],
        sealedSecret: createSecretBox(TEST_SECRETS_KEY).seal(legacySecret),
      }),
    );

    const listing = await cli.run(['channel', 'list', '--env', 'acme']);
    const listed = await cli.json<{ name: string; target: string }[]>(['channel', 'list', '--env', 'acme']);
    expect(listed.find((c) => c.name === 'credhook')?.target).toBe(
      `http://********@${base}?token=********&team=********`,
    );
    expect(listed.find((c) => c.name === 'legacy')?.target).toBe(`http://${base}?key=********`);
    for (const secret of ['hook-user', 'pa55-w0rd', 'q-s3cret-value', 'legacy-s3cret']) {
      expect(listing.stdout).not.toContain(secret);
      expect(JSON.stringify(listed)).not.toContain(secret);
    }
    const stored = JSON.stringify(await cli.snapshot());
    for (const secret of ['hook-user', 'pa55-w0rd', 'q-s3cret-value']) expect(stored).not.toContain(secret);

    // The receiver gets the URL whole; an answer that echoes it is shown and logged masked.
    receiver.secrets = [created.secret, legacySecret];
    receiver.respond = (req) => ({ status: 404, body: `no route for ${req.path}` });
    const tests = [
      await cli.run(['channel', 'test', '--env', 'acme', '--name', 'credhook']),
      await cli.run(['channel', 'test', '--env', 'acme', '--name', 'legacy']),
    ];
    expect(tests.map((t) => t.code)).toEqual([1, 1]);
    expect(receiver.requests.map((r) => [r.path, r.verifiedWith])).toEqual([
      ['/in?token=q-s3cret-value&team=ops', 0],
      ['/in?key=legacy-s3cret', 1],
    ]);
    const basic = Buffer.from('hook-user:pa55-w0rd').toString('base64');
    expect(receiver.requests[0]?.headers.authorization).toBe(`Basic ${basic}`);
    const log = await cli.run(['notify', 'log', '--env', 'acme', '--json']);
    const shown = tests.map((t) => t.stdout).join('') + log.stdout;
    expect(shown).toContain('no route for /in?token=********&team=********');
    for (const secret of ['q-s3cret-value', 'legacy-s3cret']) expect(shown).not.toContain(secret);

    expect((await cli.run(['channel', 'rotate-secret', '--env', 'acme', '--name', 'legacy'])).code).toBe(0);
    expect(JSON.stringify(await cli.snapshot())).not.toContain('legacy-s3cret');
    for (const name of ['credhook', 'legacy'])
      expect((await cli.run(['channel', 'delete', '--env', 'acme', '--name', name])).code).toBe(0);
  });

  it('refuses internal addresses and bad input with one line', async () => {
    const create =
      (args: string[], env: Record<string, string> = {}) =>
      () =>
        cli.run(['channel', 'create', '--env', 'acme', ...args], env);
    const hook = (url: string, env: Record<string, string> = {}) =>
      create(['--name', 'bad', '--type', 'webhook', '--url', url], env);
    const email = (...args: string[]) => create(['--name', 'x', '--type', 'email', ...args]);
    const notAllowed = /which is not allowed; list the host in VIGIL_NOTIFY_ALLOWED_HOSTS/;
    const noAllowance = { VIGIL_NOTIFY_ALLOWED_HOSTS: '' };
    const header = [
      '--name',
      'x',
      '--type',
      'webhook',
      '--url',
      'http://127.0.0.1/',
      '--header',
      'webhook-id: 1',
    ];
    const cases: [Run, RegExp, number?][] = [
      [hook('http://127.0.0.1:9/hook', noAllowance), notAllowed],
      [hook('http://10.0.0.1/hook'), notAllowed],
      [hook('http://169.254.169.254/latest/meta-data'), notAllowed],
      [hook('http://localhost:9/hook', noAllowance), notAllowed],
      [create(['--name', 'x', '--type', 'pager']), /--type must be webhook, slack or email/, 2],
      [create(['--name', 'x', '--type', 'webhook']), /webhook channels need --url/, 2],
      [email('--to', 'not-an-address'), /invalid email address/],
      [email('--to', 'a@b.test', '--url', 'http://x'), /--url does not apply/, 2],
      [create(['--name', 'bad name', '--type', 'email', '--to', 'a@b.test']), /invalid channel name/],
      [hook('ftp://example.com/'), /http:\/\/ or https:\/\//],
      [create(header), /set by Vigil/],
      [() => cli.run(['channel', 'delete', '--env', 'acme', '--name', 'nope']), /no channel "nope"/],
      [() => cli.run(['channel', 'list', '--env', 'nope']), /unknown environment/],
    ];
    const results = await runAll(cases.map(([run]) => run));
    results.forEach((r, i) => expectRefusal(r, cases[i]?.[1] ?? /./, cases[i]?.[2]));
  });
});

describe('vigil route', () => {
  it('creates, lists and deletes routes; a channel in use cannot be deleted', async () => {
    expect(
      (
        await cli.run([
          'channel',
          'create',
          '--env',
          'acme',
          '--name',
          'mail',
          '--type',
          'email',
          '--to',
          'a@b.test,c@d.test',
        ])
      ).code,
    ).toBe(0);
    const created = await cli.run([
      ...[
        'route',
        'create',
        '--env',
        'acme',
        '--name',
        'night',
        '--channel',
        'mail',
        '--category',
        'Sensors',
      ],
      ...['--min-status', 'ERROR', '--device', 'hall-*', '--include-success', '--remind-every', '1h'],
      ...['--quiet-hours', '22:00-07:00', '--time-zone', 'Europe/Amsterdam', '--label', 'site=amsterdam'],
    ]);
    expect(created.code, created.stderr).toBe(0);
    const list = await cli.json<Record<string, unknown>[]>(['route', 'list', '--env', 'acme']);
    expect(list).toEqual([
      {
        name: 'night',
        channels: ['mail'],
        filter: 'Sensors, ERROR and above, device hall-*, labels site=amsterdam, with returns to SUCCESS',
        labels: { site: 'amsterdam' },
        remindEvery: 3_600_000,
        quietHours: '22:00-07:00 Europe/Amsterdam',
        createdUTC: expect.any(String) as unknown,
      },
    ]);
    expect((await cli.run(['route', 'list', '--env', 'acme'])).stdout).toContain(
      '22:00-07:00 Europe/Amsterdam',
    );
    expectRefusal(
      await cli.run(['channel', 'delete', '--env', 'acme', '--name', 'mail']),
      /used by route\(s\) night/,
    );
    expect((await cli.run(['route', 'delete', '--env', 'acme', '--name', 'night'])).code).toBe(0);
    expect((await cli.run(['channel', 'delete', '--env', 'acme', '--name', 'mail'])).code).toBe(0);
  });

  it('refuses bad routes with one line', async () => {
    expect(
      (
        await cli.run([
          'channel',
          'create',
          '--env',
          'acme',
          '--name',
          'm2',
          '--type',
          'email',
          '--to',
          'a@b.test',
        ])
      ).code,
    ).toBe(0);
    const route =
      (...args: string[]) =>
      () =>
        cli.run(['route', 'create', '--env', 'acme', '--name', 'r', ...args]);
    const cases: [Run, RegExp][] = [
      [route('--channel', 'ghost'), /no channel ghost/],
      [route('--channel', 'm2', '--min-status', 'LOUD'), /minStatus/],
      [route('--channel', 'm2', '--category', 'Weather'), /category/],
      [route('--channel', 'm2', '--quiet-hours', '25:00-07:00'), /expected HH:MM-HH:MM/],
      [
        route('--channel', 'm2', '--quiet-hours', '22:00-07:00', '--time-zone', 'Mars/Base'),
        /unknown time zone/,
      ],
      [route('--channel', 'm2', '--remind-every', 'soon'), /at least 1m/],
      [route('--channel', 'm2', '--time-zone', 'UTC'), /a time zone needs quiet hours/],
    ];
    const results = await runAll(cases.map(([run]) => run));
    results.forEach((r, i) => expectRefusal(r, cases[i]?.[1] ?? /./));
    expect((await cli.run(['route', 'list', '--env', 'acme', '--json'])).stdout.trim()).toBe('[]');
  });
});

describe('channels and routes in provisioning', () => {
  it('applies channels and routes, keeps a generated secret, and a second run changes nothing', async () => {
    const receiver = await startHttpReceiver();
    writeFileSync(
      join(dir, 'environments.yaml'),
      [
        'environments:',
        '  - name: prov',
        '    channels:',
        '      - name: hook',
        '        type: webhook',
        `        url: \${HOOK_URL}`,
        '        headers: { X-Token: "${HOOK_TOKEN:-tok-default}" }',
        '      - { name: mail, type: email, to: "ops@example.test, lead@example.test" }',
        '    routes:',
        '      - { name: warnings, channels: [hook, mail], minStatus: WARNING, includeSuccess: true }',
        '      - { name: amsterdam, channels: [mail], labels: { site: amsterdam } }',
      ].join('\n'),
    );
    const env = { HOOK_URL: `${receiver.url}/prov` };
    const first = await cli.run(['provision', 'apply', dir, '--json'], env);
    expect(first.code, first.stderr).toBe(0);
    const details = (JSON.parse(first.stdout) as { details: string[] }).details;
    expect(details.filter((d) => d.startsWith('prov: '))).toEqual([
      expect.stringMatching(
        /^prov: channel hook \(webhook\); signing secret whsec_\S+ \(shown only this once\)$/,
      ) as unknown,
      'prov: channel mail (email)',
      'prov: route warnings',
      'prov: route amsterdam',
    ]);
    const routes = await cli.json<{ name: string; labels: Record<string, string> }[]>([
      ...['route', 'list', '--env', 'prov'],
    ]);
    expect(routes.map((r) => [r.name, r.labels])).toEqual([
      ['amsterdam', { site: 'amsterdam' }],
      ['warnings', {}],
    ]);
    // What it changed is in the environment's audit log, secrets masked.
    type Entry = { actor: string; action: string; target: string; before?: unknown; after: unknown };
    const provisioned = (await cli.json<{ entries: Entry[] }>(['audit', '--env', 'prov'])).entries;
    expect(provisioned.map((e) => [e.action, e.target]).reverse()).toEqual([
      ['channel.provision', 'hook'],
      ['channel.provision', 'mail'],
      ['route.provision', 'warnings'],
      ['route.provision', 'amsterdam'],
    ]);
    expect(new Set(provisioned.map((e) => e.actor))).toEqual(new Set([`cli:${userInfo().username}`]));
    expect(provisioned.at(-1)).toMatchObject({ after: { name: 'hook', type: 'webhook' } });
    expect(provisioned.at(-1)?.before).toBeUndefined();
    expect(JSON.stringify(provisioned)).not.toMatch(/whsec_[A-Za-z0-9+/]{20}|tok-default/);
    const before = await cli.snapshot();
    const second = await cli.run(['provision', 'apply', dir], env);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.trim()).toBe('0 changes');
    expect(await cli.snapshot()).toEqual(before);

    const changed = await cli.run(['provision', 'apply', dir, '--json'], { ...env, HOOK_TOKEN: 'tok-new' });
    expect((JSON.parse(changed.stdout) as { details: string[] }).details).toEqual([
      'prov: channel hook (webhook)',
    ]);
    const secretField = (snapshot: Record<string, unknown>) =>
      (
        JSON.parse((snapshot[`${cli.prefix}:env:prov:channels`] as Record<string, string>).hook ?? '{}') as {
          sealedSecret: string;
        }
      ).sealedSecret;
    expect(secretField(await cli.snapshot())).toBe(secretField(before));
    const [changedEntry] = (await cli.json<{ entries: Entry[] }>(['audit', '--env', 'prov', '--limit', '1']))
      .entries;
    expect(changedEntry).toMatchObject({
      action: 'channel.provision',
      target: 'hook',
      before: { name: 'hook' },
      after: { name: 'hook' },
    });

    const bad = await cli.run(['provision', 'apply', dir], { HOOK_URL: 'http://10.0.0.1/x' });
    expectRefusal(bad, /prov: channel hook: 10\.0\.0\.1 reaches 10\.0\.0\.1 \(private\)/);
  });
});

describe('vigil audit', () => {
  it('lists who changed which channel and route, newest first, as many as --limit asks', async () => {
    expect((await cli.run(['env', 'create', 'audited'])).code).toBe(0);
    const channel = ['--env', 'audited', '--name', 'mail'];
    expect(
      (await cli.run(['channel', 'create', ...channel, '--type', 'email', '--to', 'a@example.test'])).code,
    ).toBe(0);
    const route = ['--env', 'audited', '--name', 'all'];
    expect((await cli.run(['route', 'create', ...route, '--channel', 'mail'])).code).toBe(0);
    expect((await cli.run(['route', 'delete', ...route])).code).toBe(0);
    expect((await cli.run(['channel', 'delete', ...channel])).code).toBe(0);
    expect((await cli.run(['route', 'delete', ...route])).code).toBe(1); // refused: no audit entry

    const { entries } = await cli.json<{
      entries: { atUTC: string; actor: string; action: string; target: string }[];
    }>(['audit', '--env', 'audited']);
    expect(entries.map((e) => [e.action, e.target])).toEqual([
      ['channel.delete', 'mail'],
      ['route.delete', 'all'],
      ['route.create', 'all'],
      ['channel.create', 'mail'],
    ]);
    expect(new Set(entries.map((e) => e.actor))).toEqual(new Set([`cli:${userInfo().username}`]));
    expect(entries.every((e) => !Number.isNaN(Date.parse(e.atUTC)))).toBe(true);
    const limited = await cli.run(['audit', '--env', 'audited', '--limit', '1']);
    expect(limited.stdout.trim().split('\n')).toHaveLength(2); // the header and one entry
    expect(limited.stdout).toMatch(/channel\.delete\s+mail/);
    expectRefusal(await cli.run(['audit', '--env', 'nowhere']), /nowhere/);
  });
});
