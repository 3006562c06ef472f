/**
 * The `vigil` command's remote mode against a running Vigil: managing an environment over HTTP with
 * a token alone — no Redis reachable from the command, no Vigil settings — from the command line,
 * the environment and a profile file; the answers and refusals of the direct mode; and a `--env`
 * that is not the token's refused.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { startApiHarness, type ApiHarness } from './api-harness.ts';
import { CLI_TEST_TIMEOUT_MS, createCliHarness, type CliHarness } from './cli-run.ts';

vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

const PARSER = 'function parsePayload(s) { return JSON.parse(s); }\n';
const DEFINITION = `name: Boiler
manufacturer: Acme
version: "1"
parser: boiler.js
dataPoints:
  - name: Pressure
    dataType: number
    thresholds:
      - { status: WARNING, above: 2.5 }
`;

/** A port nothing listens on: one the system just gave out and took back. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

let h: ApiHarness;
let cli: CliHarness;
let dir: string;
let remote: Record<string, string>;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  h = await startApiHarness({ roles: 'api' }, (fn) => cleanups.push(fn));
  await h.seedEnvironment('acme');
  const { token } = await h.admin.createToken('acme', 'laptop', 0, ['read', 'write', 'admin']);
  const vigil = await startVigil(h.config, createLogger('silent'));
  cleanups.push(() => vigil.close());
  dir = mkdtempSync(join(tmpdir(), 'vigil-remote-'));
  writeFileSync(join(dir, 'boiler.yaml'), DEFINITION);
  writeFileSync(join(dir, 'boiler.js'), PARSER);
  // Whatever the command would need of Redis is out of its reach: a port nothing listens on.
  cli = createCliHarness({
    VIGIL_REDIS_URL: 'redis://127.0.0.1:1',
    VIGIL_PROFILES_FILE: join(dir, 'profiles.yaml'),
  });
  remote = { VIGIL_URL: `http://127.0.0.1:${vigil.ports.api}`, VIGIL_TOKEN: token };
});
afterAll(async () => {
  await cli.close();
  for (const fn of cleanups.reverse()) await fn();
  rmSync(dir, { recursive: true, force: true });
});

const run = (args: string[], env = remote) => cli.run(args, env);
const json = async <T>(args: string[], env = remote): Promise<T> => {
  const r = await run([...args, '--json'], env);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as T;
};

describe('vigil over HTTP', () => {
  it('creates, changes, lists and deletes a device with a token and a URL only', async () => {
    const created = await json<{ revision: number; labels: Record<string, string> }>([
      ...['device', 'create', '--env', 'acme', '--name', 'boiler-1', '--definition', 'ComfortSensors'],
      ...['--label', 'site=delft'],
    ]);
    expect(created).toMatchObject({ revision: 1, labels: { site: 'delft' } });
    const stale = await run([
      'device',
      'update',
      '--env',
      'acme',
      '--name',
      'boiler-1',
      '--display-name',
      'B',
      '--revision',
      '7',
    ]);
    expect(stale.code).toBe(1);
    expect(stale.stderr).toMatch(/^vigil: .*revision/);
    const listed = await json<{ deviceName: string; labels: Record<string, string> }[]>([
      ...['device', 'list', '--env', 'acme', '--label', 'site=delft'],
    ]);
    expect(listed.map((d) => d.deviceName)).toEqual(['boiler-1']);
    expect((await run(['device', 'delete', '--env', 'acme', '--name', 'boiler-1'])).code).toBe(0);
    // The change is the token's, in the audit log of the service.
    const audit = await json<{ entries: { actor: string; action: string }[] }>([
      'audit',
      '--env',
      'acme',
      '--limit',
      '3',
    ]);
    expect(audit.entries.map((e) => [e.actor, e.action])).toEqual([
      ['token:laptop', 'device.delete'],
      ['token:laptop', 'device.create'],
    ]);
  });

  it('applies a definition as a draft, lists its versions and publishes one', async () => {
    const draft = await json<{ version: number; published: number }>([
      ...['definition', 'apply', join(dir, 'boiler.yaml'), '--env', 'acme', '--draft', '--note', 'first'],
    ]);
    // A new definition's first version is published whatever --draft says.
    expect(draft).toEqual(expect.objectContaining({ version: 1, published: 1 }));
    writeFileSync(join(dir, 'boiler.yaml'), DEFINITION.replace('above: 2.5', 'above: 3'));
    const second = await json<{ version: number; published: number }>([
      ...['definition', 'apply', join(dir, 'boiler.yaml'), '--env', 'acme', '--draft'],
    ]);
    expect(second).toMatchObject({ version: 2, published: 1 });
    const versions = await json<{ version: number; published: boolean }[]>([
      'definition',
      'versions',
      'Boiler',
      '--env',
      'acme',
    ]);
    expect(versions.map((v) => [v.version, v.published])).toEqual([
      [2, false],
      [1, true],
    ]);
    expect(
      (
        await json<{ published: number }>([
          'definition',
          'publish',
          'Boiler',
          '--env',
          'acme',
          '--version',
          '2',
        ])
      ).published,
    ).toBe(2);
  });

  it('refuses a --env that is not the token’s, an unknown token, and a Vigil that does not answer', async () => {
    const other = await run(['device', 'list', '--env', 'other']);
    expect(other.code).toBe(1);
    expect(other.stderr).toMatch(/acme/);
    const badToken = await run(['device', 'list', '--env', 'acme'], {
      ...remote,
      VIGIL_TOKEN: `vt_${'x'.repeat(43)}`,
    });
    expect(badToken.code).toBe(1);
    expect(badToken.stderr).toMatch(/^vigil: /);
    const down = await run(['device', 'list', '--env', 'acme'], {
      ...remote,
      VIGIL_URL: `http://127.0.0.1:${await closedPort()}`,
    });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/ECONNREFUSED/);
  });

  it('takes the Vigil from --url and --token before the command, or from a profile, and refuses a profile file others can read', async () => {
    const flags = await run(
      [
        '--url',
        remote.VIGIL_URL!,
        '--token',
        remote.VIGIL_TOKEN!,
        'device',
        'list',
        '--env',
        'acme',
        '--json',
      ],
      {},
    );
    expect(flags.code, flags.stderr).toBe(0);
    const set = await run(['profile', 'set', 'lab', '--url', remote.VIGIL_URL!, '--token-stdin'], {});
    expect(set.code).toBe(2); // no token on stdin: the first line is empty, which is no vt_ token
    const saved = await cli.run(
      ['profile', 'set', 'lab', '--url', remote.VIGIL_URL!, '--token-stdin'],
      {},
      `${remote.VIGIL_TOKEN}\n`,
    );
    expect(saved.code, saved.stderr).toBe(0);
    const byProfile = await run(['device', 'list', '--env', 'acme', '--json'], {});
    expect(byProfile.code, byProfile.stderr).toBe(0);
    expect(JSON.parse(byProfile.stdout)).toEqual(JSON.parse(flags.stdout));
    chmodSync(join(dir, 'profiles.yaml'), 0o644);
    const open = await run(['device', 'list', '--env', 'acme'], {});
    expect(open.code).toBe(1);
    expect(open.stderr).toMatch(/chmod 600/);
  });
});
