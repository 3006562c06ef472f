/**
 * The `vigil` command reads the settings file (VIGIL_CONFIG_FILE): a setting found only there
 * takes effect, the environment wins over it, and a file it must refuse stops the command with a
 * configuration error (exit 2) naming what is at fault.
 */
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { TEST_SECRETS_KEY } from '../support/alerting.ts';
import { CLI_TEST_TIMEOUT_MS, createCliHarness, type CliHarness } from './cli-run.ts';

// Each test starts `vigil` processes one after another, a Node start each.
vi.setConfig({ testTimeout: CLI_TEST_TIMEOUT_MS });

let cli: CliHarness;
let dir: string;
let files = 0;

/** A settings file holding `lines`, with permission bits `mode`. */
function settingsFile(lines: string[], mode = 0o600): string {
  const path = join(dir, `vigil-${++files}.env`);
  writeFileSync(path, `${lines.join('\n')}\n`);
  chmodSync(path, mode);
  return path;
}

/** Creates an email channel: it needs VIGIL_SECRETS_KEY, and nothing else from outside. */
const createChannel = (name: string, env: Record<string, string>) =>
  cli.run(
    ['channel', 'create', '--env', 'acme', '--name', name, '--type', 'email', '--to', 'a@example.test'],
    env,
  );

beforeAll(async () => {
  cli = createCliHarness();
  dir = mkdtempSync(join(tmpdir(), 'vigil-cli-settings-'));
  expect((await cli.run(['env', 'create', 'acme'])).code).toBe(0);
});

afterAll(async () => {
  await cli.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('vigil with a settings file', () => {
  it('takes a setting from the file, and the environment wins over it', async () => {
    const file = settingsFile([
      '# the secrets key, and nothing else',
      `VIGIL_SECRETS_KEY=${TEST_SECRETS_KEY}`,
    ]);
    const [fromFile, envWins, noFile] = await Promise.all([
      createChannel('from-file', { VIGIL_CONFIG_FILE: file }),
      createChannel('env-wins', { VIGIL_CONFIG_FILE: file, VIGIL_SECRETS_KEY: '' }),
      createChannel('no-file', {}),
    ]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    // Without a key (the environment's empty one, or none at all) the channel is refused.
    expect([envWins.code, noFile.code]).toEqual([1, 1]);
    expect([envWins.stderr, noFile.stderr]).toEqual([
      expect.stringContaining('VIGIL_SECRETS_KEY'),
      expect.stringContaining('VIGIL_SECRETS_KEY'),
    ]);
    const listed = await cli.run(['channel', 'list', '--env', 'acme', '--json'], { VIGIL_CONFIG_FILE: file });
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { name: string }[]).map((c) => c.name)).toEqual(['from-file']);
  });

  it('refuses, with exit 2 naming the variable, an unknown key, a readable secret and a missing file', async () => {
    const [unknown, readable, missing] = await Promise.all([
      cli.run(['env', 'list'], {
        VIGIL_CONFIG_FILE: settingsFile(['VIGIL_LOG_LEVEL=warn', 'VIGIL_LOG_LEVL=debug']),
      }),
      cli.run(['env', 'list'], {
        VIGIL_CONFIG_FILE: settingsFile([`VIGIL_SECRETS_KEY=${TEST_SECRETS_KEY}`], 0o644),
      }),
      cli.run(['env', 'list'], { VIGIL_CONFIG_FILE: join(dir, 'no-such.env') }),
    ]);
    expect([unknown.code, readable.code, missing.code]).toEqual([2, 2, 2]);
    expect(unknown.stderr).toContain('VIGIL_LOG_LEVL');
    expect(readable.stderr).toContain('VIGIL_SECRETS_KEY');
    expect(readable.stderr).not.toContain(TEST_SECRETS_KEY.slice(0, 12));
    expect(missing.stderr).toContain('VIGIL_CONFIG_FILE');
  });
});
