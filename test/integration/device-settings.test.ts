import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import { testConfig } from '../support/context.ts';

const config = testConfig();
const keys = createKeys(config.keyPrefix);
let redis: Redis;

beforeAll(() => {
  redis = new Redis(config.redisUrl);
});
afterAll(async () => {
  const all = await redis.keys(`${config.keyPrefix}:*`);
  if (all.length > 0) await redis.del(...all);
  redis.disconnect();
});

describe('tenancy store: device settings of many devices at once', () => {
  it('answers, in the order asked, what the per-device reads answer (empty for devices without settings)', async () => {
    const admin = createTenancyAdmin(adminDeps(redis, keys));
    const store = createTenancyStore({ redis, keys });
    await admin.createEnvironment('east', 'en');
    await admin.applyDefinition(
      { kind: 'private', env: 'east' },
      {
        name: 'Room',
        manufacturer: 'Acme',
        version: '1',
        dataPoints: [
          { name: 'Temperature', displayName: 'T', dataType: 'temperature', hysteresis: 0, thresholds: [] },
          { name: 'CO2', displayName: 'CO2', dataType: 'co2', hysteresis: 0, thresholds: [] },
        ],
      },
      'function parsePayload(s) { return JSON.parse(s); }',
    );
    for (const name of ['alpha', 'beta', 'gamma']) {
      await admin.createDevice('east', { name, definitionName: 'Room', definitionIsPublic: false });
    }
    await admin.setThreshold('east', 'alpha', 'CO2', [{ status: 'WARNING', above: 900 }]);
    await admin.suppress('east', 'alpha', 'Temperature', 0);
    await admin.suppress('east', 'gamma', 'CO2', 4_000_000_000_000);

    const names = ['gamma', 'beta', 'alpha', 'nobody'];
    const batch = await store.getDeviceSettings('east', names);
    const single = await Promise.all(
      names.map(async (n) => ({
        overrides: await store.getThresholdOverrides('east', n),
        suppressed: await store.getSuppressed('east', n),
      })),
    );
    expect(batch).toEqual(single);
    expect(batch[2]).toEqual({
      overrides: new Map([['CO2', { rules: [{ status: 'WARNING', above: 900 }], hysteresis: 0 }]]),
      suppressed: new Map([['Temperature', 0]]),
    });
    expect(batch[1]).toEqual({ overrides: new Map(), suppressed: new Map() });
    expect(await store.getDeviceSettings('east', [])).toEqual([]);
  });
});
