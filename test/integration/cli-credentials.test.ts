/**
 * The `vigil` commands added with the management operations of keys, tokens and users, run as the
 * real command: `apikey rotate --overlap`, an API key's auto-create rule set by `apikey create` and
 * changed and cleared by `apikey update`, `user disable` and `user enable`, what the listings show
 * of them, and that the command's changes are in the audit log as `cli:<OS user>`.
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createAuditLog } from '../../src/audit/audit-log.ts';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import type { PublicApiKey } from '../../src/tenancy/admin-credentials.ts';
import { COMFORT_SENSORS, PARSER } from './api-harness.ts';
import { decodeUser } from '../../src/tenancy/records.ts';
import { sha256Hex } from '../../src/tenancy/secrets.ts';
import { CLI_TEST_TIMEOUT_MS, createCliHarness, type CliHarness } from './cli-run.ts';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

let cli: CliHarness;
let keys: ReturnType<typeof createKeys>;

beforeAll(async () => {
  cli = createCliHarness();
  keys = createKeys(cli.prefix);
  expect((await cli.run(['env', 'create', 'alpha'])).code).toBe(0);
});
afterAll(() => cli.close());

const audited = async () =>
  (
    await createAuditLog({ redis: cli.redis, keys, retentionMs: 86_400_000 }).list('alpha', { limit: 10 })
  ).entries.map((e) => [e.actor.startsWith('cli') ? 'cli' : e.actor, e.action, e.target]);

describe('vigil apikey rotate', () => {
  it('prints the new key once and keeps the old one for the overlap; 0 revokes it at once', async () => {
    const old = await cli.json<{ id: string; key: string }>([
      'apikey',
      'create',
      '--env',
      'alpha',
      '--name',
      'fleet',
    ]);
    const rotated = await cli.json<{
      name: string;
      key: string;
      previous: { id: string; expiresUTC: string };
    }>(['apikey', 'rotate', 'fleet', '--env', 'alpha', '--overlap', '2h']);
    expect([rotated.name, rotated.previous.id]).toEqual(['fleet-r2', old.id]);
    expect(rotated.key).toMatch(/^vk_[A-Za-z0-9_-]{43}$/);
    const ttl = await cli.redis.pttl(keys.apiKey(sha256Hex(old.key)));
    expect(ttl).toBeGreaterThan(7_000_000);
    expect(ttl).toBeLessThanOrEqual(7_200_000);
    const listed = await cli.json<{ name: string; expiresUTC: string | null }[]>([
      'apikey',
      'list',
      '--env',
      'alpha',
    ]);
    expect(listed.map((k) => [k.name, k.expiresUTC])).toEqual([
      ['fleet', rotated.previous.expiresUTC],
      ['fleet-r2', null],
    ]);

    const text = await cli.run(['apikey', 'rotate', 'fleet-r2', '--env', 'alpha', '--overlap', '0']);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout.split('\n')[0]).toMatch(/^vk_[A-Za-z0-9_-]{43}$/);
    expect(await cli.redis.exists(keys.apiKey(sha256Hex(rotated.key)))).toBe(0);
    const [badOverlap, noOverlap] = await Promise.all([
      cli.run(['apikey', 'rotate', 'fleet', '--env', 'alpha', '--overlap', '31d']),
      cli.run(['apikey', 'rotate', 'fleet', '--env', 'alpha']),
    ]);
    expect([badOverlap.code, noOverlap.code]).toEqual([2, 2]);
    expect(await audited()).toEqual([
      ['cli', 'apikey.rotate', 'fleet-r2'],
      ['cli', 'apikey.rotate', 'fleet'],
      ['cli', 'apikey.create', 'fleet'],
    ]);
  });
});

describe('vigil user disable and enable', () => {
  it('disables a user with a new generation, shows it in the listing, enables them again', async () => {
    const create = (username: string, role: string) =>
      cli.run([
        'user',
        'create',
        '--env',
        'alpha',
        '--username',
        username,
        '--password',
        'correct horse',
        '--role',
        role,
      ]);
    expect((await create('olga', 'admin')).code).toBe(0);
    expect((await create('dora', 'operator')).code).toBe(0);
    const stored = async () => decodeUser(await cli.redis.hget(keys.users('alpha'), 'dora'));
    const before = await stored();

    const disabled = await cli.json<{ disabled: boolean; revision: number }>([
      ...['user', 'disable', '--env', 'alpha', '--username', 'dora', '--revision', '1'],
    ]);
    expect(disabled).toMatchObject({ disabled: true, revision: 2 });
    expect((await stored())?.generation).not.toBe(before?.generation);
    const listed = await cli.json<{ username: string; disabled: boolean }[]>([
      'user',
      'list',
      '--env',
      'alpha',
    ]);
    expect(listed.map((u) => [u.username, u.disabled])).toEqual([
      ['dora', true],
      ['olga', false],
    ]);

    const stale = await cli.run([
      'user',
      'enable',
      '--env',
      'alpha',
      '--username',
      'dora',
      '--revision',
      '1',
    ]);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/^vigil: .*revision 2/);
    const enabled = await cli.run(['user', 'enable', '--env', 'alpha', '--username', 'dora']);
    expect(enabled.code, enabled.stderr).toBe(0);
    expect((await stored())?.disabled).toBeUndefined();
    // The only admin stays one.
    const last = await cli.run(['user', 'disable', '--env', 'alpha', '--username', 'olga']);
    expect(last.code).toBe(1);
    expect(last.stderr).toMatch(/^vigil: olga is the last admin/);
    expect((await audited()).slice(0, 2)).toEqual([
      ['cli', 'user.enable', 'dora'],
      ['cli', 'user.disable', 'dora'],
    ]);
  });
});

describe('vigil apikey create and update with an auto-create rule', () => {
  it('sets the rule, lists it, changes it on its revision, clears it, all audited', async () => {
    const admin = createTenancyAdmin(adminDeps(cli.redis, keys));
    await admin.applyDefinition({ kind: 'private', env: 'alpha' }, COMFORT_SENSORS, PARSER);
    const created = await cli.json<{ id: string; autoCreate: unknown }>([
      ...['apikey', 'create', '--env', 'alpha', '--name', 'ttn', '--auto-create', 'ComfortSensors'],
      ...['--auto-create-label', 'site=dock', '--auto-create-max', '50'],
    ]);
    const rule = {
      definitionName: 'ComfortSensors',
      definitionIsPublic: false,
      labels: { site: 'dock' },
      maxDevices: 50,
    };
    expect(created.autoCreate).toEqual(rule);
    const list = () => cli.json<PublicApiKey[]>(['apikey', 'list', '--env', 'alpha']);
    expect((await list()).find((k) => k.id === created.id)).toMatchObject({
      autoCreate: rule,
      devicesCreated: 0,
      revision: 1,
    });
    const table = await cli.run(['apikey', 'list', '--env', 'alpha']);
    expect(table.stdout).toMatch(/AUTO-CREATE\s+DEVICES CREATED/);

    const changed = await cli.json<PublicApiKey>([
      ...['apikey', 'update', 'ttn', '--env', 'alpha', '--auto-create', 'ComfortSensors'],
      ...['--auto-create-max', '80', '--revision', '1'],
    ]);
    expect(changed).toMatchObject({ autoCreate: { ...rule, labels: {}, maxDevices: 80 }, revision: 2 });
    const stale = await cli.run([
      'apikey',
      'update',
      'ttn',
      '--env',
      'alpha',
      '--no-auto-create',
      '--revision',
      '1',
    ]);
    expect(stale.code).toBe(1);
    const [noMax, nothing, noDefinition] = await Promise.all([
      cli.run(['apikey', 'update', 'ttn', '--env', 'alpha', '--auto-create', 'ComfortSensors']),
      cli.run(['apikey', 'update', 'ttn', '--env', 'alpha']),
      cli.run([
        'apikey',
        'update',
        'ttn',
        '--env',
        'alpha',
        '--auto-create',
        'NoSuch',
        '--auto-create-max',
        '1',
      ]),
    ]);
    expect([noMax.code, nothing.code, noDefinition.code]).toEqual([2, 2, 1]);
    const cleared = await cli.json<PublicApiKey>([
      'apikey',
      'update',
      'ttn',
      '--env',
      'alpha',
      '--no-auto-create',
    ]);
    expect(cleared).toMatchObject({ autoCreate: null, revision: 3 });
    expect((await audited()).slice(0, 3)).toEqual([
      ['cli', 'apikey.update', 'ttn'],
      ['cli', 'apikey.update', 'ttn'],
      ['cli', 'apikey.create', 'ttn'],
    ]);
  });
});
