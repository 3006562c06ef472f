import { describe, expect, it } from 'vitest';
import { ConfigError, describeConfig, loadConfig } from '../../../src/config/load-config.ts';
import { PUBLIC_DEMO } from '../../../src/config/public-demo.ts';

describe('loadConfig', () => {
  it('gives the documented defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config.apiPort).toBe(8080);
    expect(config.gatewayPort).toBe(8081);
    expect(config.mqttPort).toBe(1883);
    expect(config.roles).toEqual(['gateway', 'mqtt', 'worker', 'scheduler', 'api', 'notifier']);
    expect(config.mqttBridgeUrl).toBeUndefined();
  });

  it('reads VIGIL_ variables and parses lists and booleans', () => {
    const config = loadConfig({
      VIGIL_ROLES: 'worker, api',
      VIGIL_MQTT_ENABLED: 'false',
      VIGIL_API_PORT: '9000',
    });
    expect(config.roles).toEqual(['worker', 'api']);
    expect(config.mqttEnabled).toBe(false);
    expect(config.apiPort).toBe(9000);
  });

  it('fails naming the variable when a value is invalid', () => {
    for (const env of [{ VIGIL_API_PORT: 'eighty' }, { VIGIL_ROLES: 'gateway,cook' }]) {
      const err = configErrorOf(env);
      expect([err.code, err.variables]).toEqual(['CONFIG_INVALID', Object.keys(env)]);
    }
  });

  it('refuses unknown VIGIL_ variables, which are usually typos', () => {
    const err = configErrorOf({ VIGIL_API_PROT: '1' });
    expect([err.code, err.variables]).toEqual(['CONFIG_INVALID', ['VIGIL_API_PROT']]);
  });

  it('describes every key with a VIGIL_ variable, a default and a description', () => {
    for (const row of describeConfig()) {
      expect(row.env).toMatch(/^VIGIL_[A-Z0-9_]+$/);
      expect(row.description.length).toBeGreaterThan(10);
      // The settings file's default is a path that need not exist (test/unit/config/settings-file.test.ts).
      if (row.env === 'VIGIL_CONFIG_FILE') continue;
      expect(() => loadConfig({ [row.env]: row.default })).not.toThrow();
    }
  });
});

/** The error loadConfig throws for `env`; fails the test when it throws none. */
function configErrorOf(env: NodeJS.ProcessEnv): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('loadConfig accepted the configuration');
}

describe('configuration errors never print a secret', () => {
  it('names a malformed VIGIL_SECRETS_KEY without its value', () => {
    const key = 'Zm9yLXlvdXItZXllcy1vbmx5LXN1cGVyLXNlY3JldA';
    const err = configErrorOf({ VIGIL_SECRETS_KEY: key });
    expect(err.message).not.toContain(key.slice(0, 12));
    expect([err.code, err.variables]).toEqual(['CONFIG_INVALID', ['VIGIL_SECRETS_KEY']]);
  });

  it('names a Redis or InfluxDB URL that holds a password without the password', () => {
    const password = 'hunter2-redis-pw';
    const err = configErrorOf({
      VIGIL_REDIS_URL: `redis://vigil:${password}@redis host:6379`,
      VIGIL_INFLUX_URL: `http://admin:${password}@influx:80 86`,
    });
    expect(err.message).not.toContain(password);
    expect([err.code, err.variables]).toEqual(['CONFIG_INVALID', ['VIGIL_REDIS_URL', 'VIGIL_INFLUX_URL']]);
  });

  it('still shows the value of a setting that is not secret', () => {
    const err = configErrorOf({ VIGIL_API_PORT: 'eighty' });
    expect([err.code, err.variables]).toEqual(['CONFIG_INVALID', ['VIGIL_API_PORT']]);
    expect(err.message).toContain('"eighty"');
  });
});

describe('the demo setting', () => {
  const demoKey = PUBLIC_DEMO.secretsKey;

  it("refuses the demo's public VIGIL_SECRETS_KEY outside the demo, without printing it", () => {
    const err = configErrorOf({ VIGIL_SECRETS_KEY: demoKey });
    expect(err.message).not.toContain(demoKey.slice(0, 12));
    expect([err.code, err.variables]).toEqual(['DEMO_SECRETS_KEY_REFUSED', ['VIGIL_SECRETS_KEY']]);
  });

  it('accepts the public key with VIGIL_DEMO on loopback addresses only', () => {
    const demo = { VIGIL_DEMO: 'true', VIGIL_SECRETS_KEY: demoKey, VIGIL_HOST: '127.0.0.1' };
    expect(loadConfig(demo).demo).toBe(true);
    expect(configErrorOf({ ...demo, VIGIL_HOST: '0.0.0.0' }).variables).toEqual(['VIGIL_HOST']);
    expect(configErrorOf({ ...demo, VIGIL_OPS_HOST: '::' }).variables).toEqual(['VIGIL_OPS_HOST']);
  });

  it('is off by default, and the ops port listens on 127.0.0.1 by default', () => {
    const config = loadConfig({});
    expect([config.demo, config.opsHost, config.host]).toEqual([false, '127.0.0.1', '0.0.0.0']);
  });
});
