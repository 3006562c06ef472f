import { describe, expect, it, onTestFinished } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import { createKeys } from '../../src/keys.ts';
import { packLegacyState } from '../../src/state/pack-legacy-state.ts';
import { testConfig } from '../support/context.ts';
import { storedState } from '../support/state.ts';

function setup() {
  const config = testConfig();
  const redis = connectRedis(config.redisUrl, 'command');
  onTestFinished(() => closeRedis(redis));
  return { redis, keys: createKeys(config.keyPrefix), log: createLogger('silent') };
}

/** Field h of the text layout: six little-endian doubles. */
function legacyHour(...numbers: number[]): Buffer {
  const b = Buffer.alloc(48);
  numbers.forEach((n, i) => b.writeDoubleLE(n, 8 * i));
  return b;
}

describe('state written in the text layout', () => {
  it('is converted once at start to the packed layout, keeping every value', async () => {
    const { redis, keys, log } = setup();
    const a = keys.deviceState('e1', 'a');
    await redis.hset(a, {
      '@lc': '5000',
      '@lost': '0',
      'Temperature|v': '29.5',
      'Temperature|u': '4000',
      'Temperature|t': '17',
      'Temperature|s': 'CRITICAL',
      'Temperature|r': '1',
      'Temperature|ri': 'r1',
      'Temperature|ss': '3000',
      'Temperature|ls': '2000',
      'Temperature|h': legacyHour(0, 2, 60.5, 29.5, 31, 1),
      'Door|v': '"open"',
      'Door|u': '4000',
      'Door|t': '0',
      'Door|s': 'SUCCESS',
      'Door|r': '-1',
      'Door|ri': 'r2',
      'Door|ss': '1000',
    });
    const b = keys.deviceState('e2', 'b');
    await redis.hset(b, { 'CO2|v': '600', 'CO2|u': '10' });

    expect(await packLegacyState({ redis, keys, log })).toBe(3);
    expect(await redis.hkeys(a)).toEqual(
      expect.arrayContaining(['@lc', '@lost', 'Temperature|v', 'Temperature|p', 'Door|v', 'Door|p']),
    );
    expect(await redis.hlen(a)).toBe(6);
    const s = await storedState(redis, a);
    expect(s.device).toEqual({ '@lc': '5000', '@lost': '0' });
    expect(s.points.Temperature).toEqual({
      value: '29.5',
      updatedMs: 4000,
      offsetNs: 17,
      rule: 1,
      rulesId: 'r1',
      status: 'CRITICAL',
      lastSuccessMs: 2000,
      statusSinceMs: 3000,
      hour: { hour: 0, count: 2, total: 60.5, min: 29.5, max: 31, late: true },
    });
    expect(s.points.Door).toMatchObject({ value: '"open"', lastSuccessMs: null, hour: null });
    // Fields the text layout left out get the script's defaults.
    expect((await storedState(redis, b)).points.CO2).toMatchObject({
      updatedMs: 10,
      status: 'SUCCESS',
      rule: -1,
      rulesId: '',
      statusSinceMs: null,
    });

    // Marked done: a later start does not scan again, and a second conversion changes nothing.
    expect(await redis.get(keys.stateLayout())).toBe('1');
    await redis.hset(b, 'CO2|u', '99');
    expect(await packLegacyState({ redis, keys, log })).toBe(0);
    expect(await redis.hget(b, 'CO2|u')).toBe('99');
    await redis.del(keys.stateLayout());
    expect(await packLegacyState({ redis, keys, log })).toBe(0);
    expect((await storedState(redis, b)).points.CO2?.updatedMs).toBe(10);
  });
});
