import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config/load-config.ts';

const APP_A = '17c82e96-be03-4f38-aef3-f83d48582d97';
const APP_B = '5a1d0f3e-8c1b-4a57-9d0e-2f6b7c8d9e01';
const KEY_A = 'vk_Zm9yLXlvdXItZXllcy1vbmx5LXN1cGVyLXNlY3JldA';
const KEY_B = 'vk_c2Vjb25kLWtleS1vZi1hbm90aGVyLWVudmlyb25tZW50';

/** The error loadConfig throws for `value`; fails the test when it throws none. */
function refusal(value: string): ConfigError {
  try {
    loadConfig({ VIGIL_MQTT_BRIDGE_CHIRPSTACK: value });
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error('loadConfig accepted the configuration');
}

describe('VIGIL_MQTT_BRIDGE_CHIRPSTACK', () => {
  it('maps no application by default', () => {
    expect(loadConfig({}).mqttBridgeChirpstack.size).toBe(0);
  });

  it('maps each application id, in lowercase, to its API key', () => {
    const config = loadConfig({
      VIGIL_MQTT_BRIDGE_CHIRPSTACK: ` ${APP_A.toUpperCase()}=${KEY_A} , ${APP_B}=${KEY_B},`,
    });
    expect([...config.mqttBridgeChirpstack]).toEqual([
      [APP_A, KEY_A],
      [APP_B, KEY_B],
    ]);
  });

  it('lets two applications share a key', () => {
    const config = loadConfig({ VIGIL_MQTT_BRIDGE_CHIRPSTACK: `${APP_A}=${KEY_A},${APP_B}=${KEY_A}` });
    expect(config.mqttBridgeChirpstack.get(APP_B)).toBe(KEY_A);
  });

  it.each([
    ['an entry without =', `${APP_A}${KEY_A}`],
    ['an application id that is not a UUID', `my-app=${KEY_A}`],
    ['an application mapped twice', `${APP_A}=${KEY_A},${APP_A.toUpperCase()}=${KEY_B}`],
    ['a key that is not an API key', `${APP_A}=${KEY_A.slice(3)}`],
    ['an empty key', `${APP_A}=`],
  ])('refuses %s, naming the variable and none of the value', (_case, value) => {
    const err = refusal(value);
    expect([err.code, err.variables]).toEqual(['CONFIG_INVALID', ['VIGIL_MQTT_BRIDGE_CHIRPSTACK']]);
    expect(err.message).not.toContain(KEY_A.slice(3, 20));
    expect(err.message).not.toContain(APP_A.slice(0, 8));
  });
});
