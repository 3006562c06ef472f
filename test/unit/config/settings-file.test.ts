import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '../../../src/alerting/secret-box.ts';
import {
  ConfigError,
  loadConfig,
  settingsFilePath,
  type LoadConfigOptions,
} from '../../../src/config/load-config.ts';
import { PUBLIC_DEMO } from '../../../src/config/public-demo.ts';
import { settingSource } from '../../../src/config/setting-source.ts';
import { writeSettingsFile } from '../../../src/config/settings-file.ts';

const dir = mkdtempSync(join(tmpdir(), 'vigil-settings-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const KEY = Buffer.alloc(32, 7).toString('base64');
let files = 0;

/** A settings file holding `lines`, with permission bits `mode`; its absolute path. */
function settingsFile(lines: string[], mode = 0o600): string {
  const path = join(dir, `vigil-${++files}.env`);
  writeFileSync(path, `${lines.join('\n')}\n`);
  chmodSync(path, mode);
  return path;
}

/** The error loadConfig throws; fails the test when it throws none. */
function configErrorOf(env: NodeJS.ProcessEnv, options: LoadConfigOptions = {}): ConfigError {
  try {
    loadConfig(env, {}, options);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('loadConfig accepted the configuration');
}

describe('the settings file', () => {
  it('is read where VIGIL_CONFIG_FILE says; the environment wins over it, it over the defaults', () => {
    const file = settingsFile([
      '# Vigil on this machine',
      '',
      'VIGIL_API_PORT=9001',
      'export VIGIL_LOG_LEVEL=debug   # while we look into it',
      "VIGIL_SMTP_FROM='Vigil <vigil@example.com>'",
    ]);
    const config = loadConfig({ VIGIL_CONFIG_FILE: file, VIGIL_API_PORT: '9002' });
    expect([config.apiPort, config.logLevel, config.smtpFrom, config.gatewayPort]).toEqual([
      9002,
      'debug',
      'Vigil <vigil@example.com>',
      8081,
    ]);
    expect(config.configFile).toBe(file);
    expect(settingSource(config, 'apiPort')).toEqual({ set: true, where: 'the environment' });
    expect(settingSource(config, 'logLevel')).toEqual({ set: true, where: `${file} (line 4)` });
    expect(settingSource(config, 'gatewayPort')).toMatchObject({ set: false });
  });

  it('lets overrides win over both, as tests use them', () => {
    const file = settingsFile(['VIGIL_API_PORT=9001']);
    expect(loadConfig({ VIGIL_CONFIG_FILE: file, VIGIL_API_PORT: '9002' }, { apiPort: 9003 }).apiPort).toBe(
      9003,
    );
  });

  it('refuses an unknown key, naming it and its line, like an unknown VIGIL_ variable', () => {
    const file = settingsFile(['# settings', 'VIGIL_API_PORT=9001', '', 'VIGIL_API_PROT=9002', 'API_PORT=1']);
    const err = configErrorOf({ VIGIL_CONFIG_FILE: file });
    expect([err.code, err.variables, err.places]).toEqual([
      'CONFIG_INVALID',
      ['VIGIL_API_PROT', 'API_PORT'],
      [
        { file, line: 4 },
        { file, line: 5 },
      ],
    ]);
  });

  it('refuses a line that is not NAME=value, a setting given twice, and VIGIL_CONFIG_FILE itself', () => {
    const file = settingsFile([
      'VIGIL_LOG_LEVEL: debug',
      'VIGIL_API_PORT=9001',
      'VIGIL_API_PORT=9002',
      `VIGIL_CONFIG_FILE=${file1()}`,
    ]);
    const err = configErrorOf({ VIGIL_CONFIG_FILE: file });
    expect([err.code, err.variables, err.places.map((p) => p.line)]).toEqual([
      'CONFIG_INVALID',
      ['VIGIL_API_PORT', 'VIGIL_CONFIG_FILE'],
      [1, 3, 4],
    ]);
  });

  it("names a value's line when the file's value is invalid", () => {
    const file = settingsFile(['VIGIL_LOG_LEVEL=info', 'VIGIL_API_PORT=eighty']);
    const err = configErrorOf({ VIGIL_CONFIG_FILE: file });
    expect([err.code, err.variables, err.places]).toEqual([
      'CONFIG_INVALID',
      ['VIGIL_API_PORT'],
      [{ file, line: 2 }],
    ]);
  });

  it('refuses an unquoted "#" inside a value, which would cut it short, and takes it quoted', () => {
    const bare = settingsFile(['VIGIL_INFLUX_PASSWORD=abc#123']);
    expect(configErrorOf({ VIGIL_CONFIG_FILE: bare }).places).toEqual([{ file: bare, line: 1 }]);
    const quoted = settingsFile(["VIGIL_INFLUX_PASSWORD='abc#123' # the password"]);
    expect(loadConfig({ VIGIL_CONFIG_FILE: quoted }).influxPassword).toBe('abc#123');
  });

  it("refuses the demo's public secrets key in a plain start, naming its line", () => {
    const file = settingsFile([`VIGIL_SECRETS_KEY=${PUBLIC_DEMO.secretsKey}`]);
    const err = configErrorOf({ VIGIL_CONFIG_FILE: file });
    expect([err.code, err.variables, err.places]).toEqual([
      'DEMO_SECRETS_KEY_REFUSED',
      ['VIGIL_SECRETS_KEY'],
      [{ file, line: 1 }],
    ]);
  });
});

/** A settings file with nothing in it. */
const file1 = () => settingsFile(['# nothing']);

describe('a settings file holding a secret', () => {
  it('is refused when its group or others can read it (0644), naming the secrets and the file', () => {
    const file = settingsFile(
      [`VIGIL_SECRETS_KEY=${KEY}`, 'VIGIL_METRICS_TOKEN=t0ken', 'VIGIL_API_PORT=9001'],
      0o644,
    );
    const err = configErrorOf({ VIGIL_CONFIG_FILE: file });
    expect([err.code, err.variables, err.places]).toEqual([
      'CONFIG_INVALID',
      ['VIGIL_SECRETS_KEY', 'VIGIL_METRICS_TOKEN'],
      [{ file }],
    ]);
    expect(err.message).not.toContain(KEY.slice(0, 12));
  });

  it('is read when only its owner can (0600)', () => {
    const file = settingsFile([`VIGIL_SECRETS_KEY=${KEY}`], 0o600);
    expect(loadConfig({ VIGIL_CONFIG_FILE: file }).secretsKey).toBe(KEY);
  });

  it('counts a URL with a password as a secret, and one without none, as an empty secret', () => {
    const withPassword = settingsFile(['VIGIL_REDIS_URL=redis://vigil:pw@127.0.0.1:6379'], 0o640);
    expect(configErrorOf({ VIGIL_CONFIG_FILE: withPassword }).variables).toEqual(['VIGIL_REDIS_URL']);
    const plain = settingsFile(['VIGIL_REDIS_URL=redis://127.0.0.1:6380', 'VIGIL_SECRETS_KEY='], 0o644);
    expect(loadConfig({ VIGIL_CONFIG_FILE: plain }).redisUrl).toBe('redis://127.0.0.1:6380');
  });
});

describe('where the settings file is', () => {
  const missing = join(dir, 'no-such-dir', 'vigil.env');

  it('may be missing at the default path: nothing is set', () => {
    const config = loadConfig({}, {}, { defaultFile: missing });
    expect([config.apiPort, config.configFile]).toEqual([8080, undefined]);
  });

  it('must exist at a path VIGIL_CONFIG_FILE gives', () => {
    const err = configErrorOf({ VIGIL_CONFIG_FILE: missing }, { defaultFile: file1() });
    expect([err.code, err.variables, err.places]).toEqual([
      'CONFIG_INVALID',
      ['VIGIL_CONFIG_FILE'],
      [{ file: missing }],
    ]);
  });

  it('is none with an empty VIGIL_CONFIG_FILE, whatever the default', () => {
    const file = settingsFile(['VIGIL_API_PORT=9001']);
    expect(loadConfig({}, {}, { defaultFile: file }).apiPort).toBe(9001);
    expect(loadConfig({ VIGIL_CONFIG_FILE: '' }, {}, { defaultFile: file }).apiPort).toBe(8080);
    expect(settingsFilePath({ VIGIL_CONFIG_FILE: '' })).toBeUndefined();
  });

  it('is not read for an environment passed in unless it names one (tests pass their own)', () => {
    expect(settingsFilePath({})).toBeUndefined();
    expect(settingsFilePath()).toMatch(/config\/vigil\.env$/);
  });

  it("is the caller's own with the file option, whatever VIGIL_CONFIG_FILE says", () => {
    const own = settingsFile(['VIGIL_API_PORT=9001']);
    const other = settingsFile(['VIGIL_API_PORT=9002']);
    expect(loadConfig({ VIGIL_CONFIG_FILE: other }, {}, { file: own }).apiPort).toBe(9001);
  });
});

describe('writeSettingsFile', () => {
  it('writes a file loadConfig reads back as written, readable by its owner only', () => {
    const path = join(dir, 'written', 'vigil.env');
    const settings = {
      VIGIL_SECRETS_KEY: KEY,
      VIGIL_NOTIFY_ALLOWED_HOSTS: '127.0.0.1:8099,[::1]:9000',
      VIGIL_SMTP_FROM: 'Vigil #1 <vigil@example.com>',
    };
    writeSettingsFile(path, ['written by a test'], settings);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const config = loadConfig({ VIGIL_CONFIG_FILE: path });
    expect([config.secretsKey, config.notifyAllowedHosts, config.smtpFrom]).toEqual([
      KEY,
      ['127.0.0.1:8099', '[::1]:9000'],
      'Vigil #1 <vigil@example.com>',
    ]);
  });
});

describe('SECRETS_KEY_MISSING', () => {
  it('is what a secret box without a key, or with another key, refuses with', () => {
    const file = settingsFile([`VIGIL_SECRETS_KEY=${KEY}`]);
    const config = loadConfig({ VIGIL_CONFIG_FILE: file });
    const sealed = createSecretBox(config.secretsKey, settingSource(config, 'secretsKey')).seal('s');
    const other = loadConfig({
      VIGIL_CONFIG_FILE: file,
      VIGIL_SECRETS_KEY: Buffer.alloc(32, 8).toString('base64'),
    });
    const unset = loadConfig({ VIGIL_CONFIG_FILE: file1() });
    for (const c of [other, unset]) {
      const box = createSecretBox(c.secretsKey, settingSource(c, 'secretsKey'));
      expect(() => box.open(sealed)).toThrow(
        expect.objectContaining({ code: 'SECRETS_KEY_MISSING' }) as Error,
      );
    }
    expect(settingSource(unset, 'secretsKey')).toMatchObject({ set: false });
  });
});
