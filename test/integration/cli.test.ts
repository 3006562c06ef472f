import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createKeys } from '../../src/keys.ts';
import { packItems } from '../../src/queue/item-codec.ts';
import { sha256Hex, verifyPassword } from '../../src/tenancy/secrets.ts';
import { CLI_TEST_TIMEOUT_MS, createCliHarness, type CliHarness } from './cli-run.ts';

// Each test starts `vigil` processes one after another, a Node start each: on a loaded machine
// that is minutes of bounded work, not a wait.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

let cli: CliHarness;
let keys: ReturnType<typeof createKeys>;
const DEF_YAML = 'config/provisioning/demo/definitions/comfort-sensors.yaml';

beforeAll(async () => {
  cli = createCliHarness();
  keys = createKeys(cli.prefix);
  const created = await Promise.all([
    cli.run(['env', 'create', 'alpha']),
    cli.run(['env', 'create', 'beta', '--locale', 'nl']),
  ]);
  expect(created.map((r) => r.code)).toEqual([0, 0]);
  expect((await cli.run(['definition', 'apply', DEF_YAML, '--env', 'alpha'])).code).toBe(0);
});
afterAll(() => cli.close());

/** What `vigil ingest log --json` prints. */
interface LogPage {
  entries: { ingestId: string; deviceName: string | null }[];
  next: string | null;
}

/** A refusal: the exit code and exactly one line on stderr starting with "vigil: ". */
function expectRefusal(r: { code: number; stderr: string; stdout: string }, code: number, reason: RegExp) {
  expect(r.code, r.stderr).toBe(code);
  const lines = r.stderr.trimEnd().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/^vigil: /);
  expect(lines[0]).toMatch(reason);
}

describe('vigil env', () => {
  it('lists environments and refuses duplicates, bad names and bad locales', async () => {
    const [list, dup, badName, badLocale] = await Promise.all([
      cli.json<{ name: string; locale: string }[]>(['env', 'list']),
      cli.run(['env', 'create', 'alpha']),
      cli.run(['env', 'create', 'Not_Valid']),
      cli.run(['env', 'create', 'gamma', '--locale', 'fr']),
    ]);
    expect(list.map((e) => [e.name, e.locale])).toEqual([
      ['alpha', 'en'],
      ['beta', 'nl'],
    ]);
    expectRefusal(dup, 1, /exists already/);
    expectRefusal(badName, 1, /invalid environment name/);
    expectRefusal(badLocale, 2, /en or nl/);
    expect(await cli.redis.exists(keys.env('gamma'))).toBe(0);
  });

  it('answers --help with exit 0 and unknown commands or options with exit 2', async () => {
    const [help, unknown, badOption] = await Promise.all([
      cli.run(['device', 'create', '--help']),
      cli.run(['env', 'destroy']),
      cli.run(['env', 'list', '--colour']),
    ]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('--availability-minutes');
    expect(help.stdout).toContain('--json');
    expectRefusal(unknown, 2, /unknown command/);
    expectRefusal(badOption, 2, /unknown option/);
  });
});

describe('vigil apikey and token', () => {
  it('shows an API key once, stores only its hash record, and revocation removes it', async () => {
    const created = await cli.json<{ id: string; name: string; key: string }>([
      'apikey',
      'create',
      '--env',
      'alpha',
      '--name',
      'sensors',
    ]);
    expect(created.key).toMatch(/^vk_[A-Za-z0-9_-]{43}$/);
    const record = await cli.redis.hgetall(keys.apiKey(sha256Hex(created.key)));
    expect(Object.keys(record).sort()).toEqual(['createdUTC', 'env', 'id', 'name']);
    expect(record).toMatchObject({ env: 'alpha', id: created.id, name: 'sensors' });
    const everything = JSON.stringify(await cli.snapshot());
    expect(everything).not.toContain(created.key);

    const [list, dupName, unknownEnv] = await Promise.all([
      cli.json<{ id: string; name: string }[]>(['apikey', 'list', '--env', 'alpha']),
      cli.run(['apikey', 'create', '--env', 'alpha', '--name', 'sensors']),
      cli.run(['apikey', 'create', '--env', 'nowhere']),
    ]);
    expect(list).toEqual([expect.objectContaining({ id: created.id, name: 'sensors' })]);
    expect(JSON.stringify(list)).not.toContain(created.key);
    expectRefusal(dupName, 1, /exists already/);
    expectRefusal(unknownEnv, 1, /unknown environment "nowhere"/);

    expect((await cli.run(['apikey', 'revoke', created.id, '--env', 'alpha'])).code).toBe(0);
    expect(await cli.redis.exists(keys.apiKey(sha256Hex(created.key)))).toBe(0);
    expect(await cli.redis.hlen(keys.envApiKeys('alpha'))).toBe(0);
    expectRefusal(
      await cli.run(['apikey', 'revoke', created.id, '--env', 'alpha']),
      1,
      /no API key or token/,
    );
  });

  it('creates expiring and unlimited tokens, stored hashed, and revokes them by name', async () => {
    const [expiring, forever, badExpiry] = await Promise.all([
      cli.json<{ token: string; expiresUTC: string }>([
        'token',
        'create',
        '--env',
        'alpha',
        '--name',
        'ci',
        '--expires',
        '1d',
      ]),
      cli.json<{ token: string; expiresUTC: null }>([
        'token',
        'create',
        '--env',
        'alpha',
        '--name',
        'grafana',
      ]),
      cli.run(['token', 'create', '--env', 'alpha', '--expires', 'soon']),
    ]);
    expectRefusal(badExpiry, 2, /duration/);
    const ciKey = keys.token(sha256Hex(expiring.token));
    const ci = await cli.redis.hgetall(ciKey);
    expect(ci).toMatchObject({ env: 'alpha', kind: 'cli', subject: 'ci' });
    expect(Number(ci.expiresMs)).toBe(Date.parse(expiring.expiresUTC));
    expect(await cli.redis.pttl(ciKey)).toBeGreaterThan(86_000_000);
    const grafanaKey = keys.token(sha256Hex(forever.token));
    expect(await cli.redis.hget(grafanaKey, 'expiresMs')).toBe('0');
    expect(await cli.redis.pttl(grafanaKey)).toBe(-1);

    expect((await cli.run(['token', 'revoke', 'ci', '--env', 'alpha'])).code).toBe(0);
    expect(await cli.redis.exists(ciKey)).toBe(0);
    const remaining = await cli.json<{ name: string }[]>(['token', 'list', '--env', 'alpha']);
    expect(remaining.map((t) => t.name)).toEqual(['grafana']);
  });

  it('gives a token scope read unless --scope read,write, and refuses write alone', async () => {
    const [reader, writer, writeOnly] = await Promise.all([
      cli.json<{ token: string; scopes: string[] }>([
        'token',
        'create',
        '--env',
        'alpha',
        '--name',
        'reader',
      ]),
      cli.json<{ token: string; scopes: string[] }>([
        ...['token', 'create', '--env', 'alpha', '--name', 'writer', '--scope', 'read,write'],
      ]),
      cli.run(['token', 'create', '--env', 'alpha', '--scope', 'write']),
    ]);
    expect([reader.scopes, writer.scopes]).toEqual([['read'], ['read', 'write']]);
    expectRefusal(writeOnly, 2, /must also read/);
    const stored = (t: string) => cli.redis.hget(keys.token(sha256Hex(t)), 'scopes');
    expect([await stored(reader.token), await stored(writer.token)]).toEqual(['read', 'read,write']);
    const listed = await cli.json<{ name: string; scopes: string[] }[]>(['token', 'list', '--env', 'alpha']);
    expect(listed.filter((t) => t.name !== 'grafana').map((t) => [t.name, t.scopes.join(',')])).toEqual(
      expect.arrayContaining([
        ['reader', 'read'],
        ['writer', 'read,write'],
      ]),
    );
  });
});

describe('vigil user', () => {
  it('stores scrypt hashes, refuses duplicates and short passwords, and enables MFA once with a QR code', async () => {
    const [created, short] = await Promise.all([
      cli.run(['user', 'create', '--env', 'alpha', '--username', 'alice', '--password', 'correct horse']),
      cli.run(['user', 'create', '--env', 'alpha', '--username', 'bob', '--password', 'short']),
    ]);
    expect(created.code, created.stderr).toBe(0);
    expectRefusal(short, 1, /password too short/);
    const stored = JSON.parse((await cli.redis.hget(keys.users('alpha'), 'alice')) ?? '{}') as Record<
      string,
      unknown
    >;
    expect(stored.passwordHash).toMatch(/^scrypt\$/);
    expect(JSON.stringify(stored)).not.toContain('correct horse');

    const [dup, mfa] = await Promise.all([
      cli.run(['user', 'create', '--env', 'alpha', '--username', 'alice', '--password', 'another one']),
      cli.run(['user', 'mfa', 'enable', '--env', 'alpha', '--username', 'alice']),
    ]);
    expectRefusal(dup, 1, /exists already/);
    expect(mfa.code, mfa.stderr).toBe(0);
    expect(mfa.stdout).toMatch(/otpauth:\/\/totp\/Vigil:alpha%3Aalice\?\S*secret=[A-Z2-7]+/);
    expect(mfa.stdout).toMatch(/[█▀▄]/);
    const again = await cli.run(['user', 'mfa', 'enable', '--env', 'alpha', '--username', 'alice']);
    expectRefusal(again, 1, /already enabled/);
    expect(again.stdout).toBe('');
    const [fromStdin, neither] = await Promise.all([
      cli.run(
        ['user', 'create', '--env', 'alpha', '--username', 'carl', '--password-stdin'],
        {},
        'from stdin 123\n',
      ),
      cli.run(['user', 'create', '--env', 'alpha', '--username', 'dora']),
    ]);
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    const carl = JSON.parse((await cli.redis.hget(keys.users('alpha'), 'carl')) ?? '{}') as {
      passwordHash: string;
    };
    expect(await verifyPassword('from stdin 123', carl.passwordHash)).toBe(true);
    expectRefusal(neither, 2, /exactly one of --password/);
    const users = await cli.json<{ username: string; mfaEnabled: boolean }[]>([
      'user',
      'list',
      '--env',
      'alpha',
    ]);
    expect(users.map((u) => [u.username, u.mfaEnabled])).toEqual([
      ['alice', true],
      ['carl', false],
    ]);
  });

  it('makes users operators unless --role viewer, and changes a role', async () => {
    const create = (username: string, ...extra: string[]) =>
      cli.run([
        'user',
        'create',
        '--env',
        'alpha',
        '--username',
        username,
        '--password',
        'correct horse',
        ...extra,
      ]);
    const [viewer, bad] = await Promise.all([
      create('vera', '--role', 'viewer'),
      create('otto', '--role', 'root'),
    ]);
    expect(viewer.code, viewer.stderr).toBe(0);
    expectRefusal(bad, 2, /invalid role "root"/);
    const roles = async () =>
      (await cli.json<{ username: string; role: string }[]>(['user', 'list', '--env', 'alpha'])).map((u) => [
        u.username,
        u.role,
      ]);
    expect(await roles()).toEqual([
      ['alice', 'operator'],
      ['carl', 'operator'],
      ['vera', 'viewer'],
    ]);
    const changed = await cli.run([
      'user',
      'role',
      '--env',
      'alpha',
      '--username',
      'vera',
      '--role',
      'operator',
    ]);
    expect(changed.code, changed.stderr).toBe(0);
    expect((await roles()).find(([u]) => u === 'vera')).toEqual(['vera', 'operator']);
  });
});

describe('vigil device, threshold and sensor', () => {
  it('creates devices, refusing duplicates and unknown definitions without writing anything', async () => {
    const create = (name: string, ...extra: string[]) =>
      cli.run([
        'device',
        'create',
        '--env',
        'alpha',
        '--name',
        name,
        '--definition',
        'ComfortSensors',
        ...extra,
      ]);
    const [b, a] = await Promise.all([
      create('b-device', '--display-name', 'B'),
      create('a-device', '--availability-minutes', '5'),
    ]);
    expect([b.code, a.code]).toEqual([0, 0]);
    const before = await cli.snapshot();
    const [dup, unknownDef, publicMissing, badMinutes, badName] = await Promise.all([
      create('a-device'),
      cli.run(['device', 'create', '--env', 'alpha', '--name', 'c', '--definition', 'Nope']),
      create('c', '--public-definition'),
      create('c', '--availability-minutes', 'soon'),
      create('bad/name'),
    ]);
    expectRefusal(dup, 1, /exists already/);
    expectRefusal(unknownDef, 1, /no definition Nope/);
    expectRefusal(publicMissing, 1, /no definition ComfortSensors \(public\)/);
    expectRefusal(badMinutes, 2, /positive number/);
    expectRefusal(badName, 1, /invalid device name/);
    expect(await cli.snapshot()).toEqual(before);

    const list = await cli.json<
      { deviceName: string; displayName: string; availabilityMinutes: number | null }[]
    >(['device', 'list', '--env', 'alpha']);
    expect(list.map((d) => [d.deviceName, d.displayName, d.availabilityMinutes])).toEqual([
      ['a-device', 'a-device', 5],
      ['b-device', 'B', null],
    ]);
  });

  it('sets thresholds only with numbers for known data points, and suppresses until a time', async () => {
    await cli.run(['device', 'create', '--env', 'alpha', '--name', 'th', '--definition', 'ComfortSensors']);
    const set = (sensor: string, rules: string) =>
      cli.run(['threshold', 'set', '--env', 'alpha', '--device', 'th', '--sensor', sensor, '--rules', rules]);
    const until = new Date(Date.now() + 3600_000).toISOString();
    const [ok, notNumber, notJson, unknownSensor, suppress] = await Promise.all([
      set('CO2', '{"rules":[{"status":"WARNING","above":800}],"hysteresis":25}'),
      set('Temperature', '[{"status":"WARNING","above":"warm"}]'),
      set('Temperature', '[{status:WARNING}]'),
      set('Pressure', '[]'),
      cli.run([
        'sensor',
        'suppress',
        '--env',
        'alpha',
        '--device',
        'th',
        '--sensor',
        'Battery',
        '--until',
        until,
      ]),
    ]);
    expect(ok.code, ok.stderr).toBe(0);
    expectRefusal(notNumber, 1, /must be a number/);
    expectRefusal(notJson, 1, /not valid JSON/);
    expectRefusal(unknownSensor, 1, /no data point Pressure/);
    expect(suppress.code, suppress.stderr).toBe(0);
    expect(await cli.redis.hgetall(keys.deviceThresholds('alpha', 'th'))).toEqual({
      CO2: JSON.stringify({ rules: [{ status: 'WARNING', above: 800 }], hysteresis: 25, revision: 1 }),
    });
    expect(await cli.redis.hgetall(keys.deviceSuppressed('alpha', 'th'))).toEqual({
      Battery: String(Date.parse(until)),
    });

    await Promise.all([
      cli.run(['threshold', 'clear', '--env', 'alpha', '--device', 'th', '--sensor', 'CO2']),
      cli.run(['sensor', 'unsuppress', '--env', 'alpha', '--device', 'th', '--sensor', 'Battery']),
    ]);
    expect(
      await cli.redis.exists(keys.deviceThresholds('alpha', 'th'), keys.deviceSuppressed('alpha', 'th')),
    ).toBe(0);
  });

  it('updates a device and deletes it with its state, events and availability deadline', async () => {
    await cli.run(['device', 'create', '--env', 'alpha', '--name', 'gone', '--definition', 'ComfortSensors']);
    const updated = await cli.json<{ displayName: string; availabilityMinutes: number }>([
      'device',
      'update',
      '--env',
      'alpha',
      '--name',
      'gone',
      '--display-name',
      'Gone soon',
      '--availability-minutes',
      '3',
    ]);
    expect(updated).toMatchObject({ displayName: 'Gone soon', availabilityMinutes: 3 });
    await cli.redis
      .multi()
      .hset(keys.deviceState('alpha', 'gone'), 'CO2|v', '500')
      .zadd(keys.deviceEvents('alpha', 'gone'), 1, 'e')
      .zadd(keys.availabilityDeadlines(), 1, 'alpha\ngone')
      .exec();
    expect((await cli.run(['device', 'delete', '--env', 'alpha', '--name', 'gone'])).code).toBe(0);
    expect(
      await cli.redis.exists(
        keys.device('alpha', 'gone'),
        keys.deviceState('alpha', 'gone'),
        keys.deviceEvents('alpha', 'gone'),
      ),
    ).toBe(0);
    expect(await cli.redis.zscore(keys.availabilityDeadlines(), 'alpha\ngone')).toBeNull();
    expect(await cli.redis.zscore(keys.devices('alpha'), 'gone')).toBeNull();
    expectRefusal(
      await cli.run(['device', 'delete', '--env', 'alpha', '--name', 'gone']),
      1,
      /no device gone/,
    );
  });
});

describe('vigil ingest log', () => {
  it('prints the newest outcomes first, limited', async () => {
    const entry = (n: number) =>
      JSON.stringify({
        receivedUTC: `2026-01-01T00:00:0${n}.000Z`,
        ingestId: `id${n}`,
        gateway: 'gateway/submit',
        deviceName: 'a-device',
        outcome: n === 2 ? 'rejected' : 'accepted',
        code: n === 2 ? 'PARSER_ERROR' : null,
        message: n === 2 ? 'SyntaxError (at parser.js:3:9)' : null,
      });
    await cli.redis.lpush(keys.ingestLog('alpha'), entry(1), entry(2));
    const [json, text] = await Promise.all([
      cli.json<LogPage>(['ingest', 'log', '--env', 'alpha', '--limit', '1']),
      cli.run(['ingest', 'log', '--env', 'alpha']),
    ]);
    expect(json.entries.map((e) => e.ingestId)).toEqual(['id2']);
    expect(text.stdout).toContain('PARSER_ERROR');
    expect(text.stdout.indexOf('id2') === -1 && text.stdout.indexOf('rejected')).toBeLessThan(
      text.stdout.indexOf('accepted'),
    );
  });

  it('pages with --after: every entry once, newest first, new entries shifting no older page', async () => {
    expect((await cli.run(['env', 'create', 'paged'])).code).toBe(0);
    const key = keys.ingestLog('paged');
    // Plain acceptances and JSON entries, oldest pushed first; one device name holds a space.
    const stored = (n: number) =>
      n % 3 === 0
        ? JSON.stringify({
            receivedUTC: new Date(Date.UTC(2026, 0, 1, 0, 0, n)).toISOString(),
            ingestId: `id${n}`,
            gateway: 'raw',
            deviceName: `device ${n % 2}`,
            outcome: 'rejected',
            code: 'DEVICE_NOT_FOUND',
            message: 'no such device',
          })
        : `A\t${Date.UTC(2026, 0, 1, 0, 0, n)}\tid${n}\tsubmit\tdevice-${n % 2}`;
    const COUNT = 11;
    for (let n = 1; n <= COUNT; n++) await cli.redis.lpush(key, stored(n));

    const args = ['ingest', 'log', '--env', 'paged', '--limit', '4'];
    const first = await cli.json<LogPage>(args);
    // In text: the page on stdout, the command for the next one on stderr.
    const text = await cli.run(args);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.trimEnd().split('\n')).toHaveLength(4);
    expect(first.next).toEqual(expect.any(String));
    expect(text.stderr).toContain(`--after ${first.next}`);

    // Submissions arriving after the first page are newer: they do not shift the older pages.
    for (let n = COUNT + 1; n <= COUNT + 3; n++) await cli.redis.lpush(key, stored(n));
    const seen = first.entries.map((e) => e.ingestId);
    const pages = [first.entries.length];
    let next = first.next;
    while (next !== null) {
      const page = await cli.json<LogPage>([...args, '--after', next]);
      seen.push(...page.entries.map((e) => e.ingestId));
      pages.push(page.entries.length);
      next = page.next;
    }
    expect(seen).toEqual(Array.from({ length: COUNT }, (_, i) => `id${COUNT - i}`));
    expect(pages).toEqual([4, 4, 3]);

    // A cursor that names no entry kept (one that has left the log, or never was in it) is refused.
    const gone = await cli.run([...args, '--after', 'id0/device-0']);
    expect(gone.code).toBe(1);
    expect(gone.stdout).toBe('');
  });
});

describe('vigil output', () => {
  /** What a device can send as its name through the raw gateway's ?deviceName=. */
  const HOSTILE = 'dev\u001b[31mred\u001b]8;;http://x\u0007link\u001b]8;;\u0007\r2026-01-01 accepted\nforged';
  const SHOWN = 'dev\\x1b[31mred\\x1b]8;;http://x\\x07link\\x1b]8;;\\x07\\r2026-01-01 accepted\\nforged';
  // Tab and LF may stand in output; no other control character may.
  // eslint-disable-next-line no-control-regex
  const RAW = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e]/;

  it('shows control characters of device names and messages escaped in vigil ingest log', async () => {
    await cli.run(['env', 'create', 'gamma']);
    await cli.redis.lpush(
      keys.ingestLog('gamma'),
      JSON.stringify({
        receivedUTC: '2026-01-01T00:00:00.000Z',
        ingestId: 'id1',
        gateway: 'gateway/raw',
        deviceName: HOSTILE,
        outcome: 'rejected',
        code: 'DEVICE_NOT_FOUND',
        message: `no device ${HOSTILE}\u2028\u202etxt.exe`,
      }),
    );
    const text = await cli.run(['ingest', 'log', '--env', 'gamma']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).not.toMatch(RAW);
    expect(text.stdout.trimEnd().split('\n')).toEqual([
      `2026-01-01T00:00:00.000Z  rejected  gateway/raw  ${SHOWN}  DEVICE_NOT_FOUND  no device ${SHOWN}\\u2028\\u202etxt.exe`,
    ]);
    const json = await cli.run(['ingest', 'log', '--env', 'gamma', '--json']);
    expect(json.stdout).not.toMatch(RAW);
    expect((JSON.parse(json.stdout) as LogPage).entries[0]?.deviceName).toBe(HOSTILE);
  });

  it('shows them escaped in tables and refusals too', async () => {
    const create = (displayName: string) =>
      cli.run([
        ...['device', 'create', '--env', 'alpha', '--name', 'shown', '--definition', 'ComfortSensors'],
        ...['--display-name', displayName],
      ]);
    // A display name with control characters is refused, the refusal showing it escaped…
    const refusedName = await create(HOSTILE);
    expect(refusedName.code).toBe(1);
    expect(refusedName.stderr).not.toMatch(RAW);
    // …and one an older Vigil stored is listed escaped.
    const created = await create('Shown');
    expect(created.code, created.stderr).toBe(0);
    await cli.redis.hset(keys.device('alpha', 'shown'), 'displayName', HOSTILE);
    const list = await cli.run(['device', 'list', '--env', 'alpha']);
    expect(list.stdout).not.toMatch(RAW);
    expect(list.stdout.split('\n').find((l) => l.startsWith('shown '))).toContain(SHOWN);
    const refused = await cli.run(['definition', 'show', HOSTILE, '--env', 'alpha']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).not.toMatch(RAW);
    expect(refused.stderr).toMatch(/^vigil: .*dev\\x1b\[31mred/);
    await cli.run(['device', 'delete', '--env', 'alpha', '--name', 'shown']);
  });
});

describe('vigil queue', () => {
  it('shows the backlog and dead letters, and requeues dead letters into their partitions', async () => {
    const items = (n: number) =>
      packItems(
        Array.from({ length: n }, (_, i) => ({
          id: `x${i}`,
          env: 'alpha',
          gateway: 'raw' as const,
          via: 'http' as const,
          receivedMs: 0,
          body: '1',
          bodyIsHex: false,
          deviceName: 'd',
          client: 'test',
        })),
      );
    await cli.redis.xadd(keys.ingestStream(3), '*', 'n', '1', 'p', items(1));
    const deadId = await cli.redis.xadd(
      keys.deadLetters(),
      '*',
      'partition',
      '5',
      'entry',
      '1-0',
      'reason',
      'InfluxDB write failed (400): field type conflict',
      'n',
      '2',
      'p',
      items(2),
    );
    expect(await cli.json(['queue', 'status'])).toEqual({
      partitions: 8,
      entries: 1,
      deadLetters: 1,
      deadPayloads: 2,
    });
    const listed = await cli.run(['queue', 'dead-letters']);
    expect(listed.stdout).toContain(
      'partition 5  2 payloads  InfluxDB write failed (400): field type conflict',
    );
    expect(await cli.json(['queue', 'requeue', 'no-such-id'])).toEqual({ requeued: [] });
    expect(await cli.json(['queue', 'requeue'])).toEqual({ requeued: [deadId] });
    expect(await cli.redis.xlen(keys.deadLetters())).toBe(0);
    const requeued = await cli.redis.xrange(keys.ingestStream(5), '-', '+');
    expect(requeued.map(([, fields]) => fields)).toEqual([['n', '2', 'p', items(2)]]);
  });
});
