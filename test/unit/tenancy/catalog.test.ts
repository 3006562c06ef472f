import { describe, expect, it } from 'vitest';
import { createCatalog } from '../../../src/tenancy/catalog.ts';
import type { DeviceSettings, TenancyStore } from '../../../src/tenancy/tenancy-store.ts';

/** A tenancy store that answers only device settings and counts the reads. */
function fakeTenancy() {
  const calls = { batch: [] as string[][], single: 0 };
  const settingsOf = (device: string): DeviceSettings => ({
    overrides: new Map([['CO2', { rules: [{ status: 'WARNING', above: device.length }], hysteresis: 0 }]]),
    suppressed: new Map([['Temperature', 0]]),
  });
  const store = {
    getDeviceSettings(_env: string, devices: string[]) {
      calls.batch.push(devices);
      return Promise.resolve(devices.map(settingsOf));
    },
    getThresholdOverrides(_env: string, device: string) {
      calls.single++;
      return Promise.resolve(settingsOf(device).overrides);
    },
    getSuppressed(_env: string, device: string) {
      calls.single++;
      return Promise.resolve(settingsOf(device).suppressed);
    },
  } as unknown as TenancyStore;
  return { store, calls, settingsOf };
}

describe('catalog: device settings', () => {
  it('reads the settings of a whole step in one call, then serves them from the cache', async () => {
    const { store, calls, settingsOf } = fakeTenancy();
    const catalog = createCatalog({ tenancy: store, clock: () => 1000 });
    const got = await catalog.deviceSettings('east', ['a', 'bb', 'a', 'ccc']);
    expect(calls.batch).toEqual([['a', 'bb', 'ccc']]);
    expect(got.get('bb')).toEqual(settingsOf('bb'));
    expect([...got.keys()]).toEqual(['a', 'bb', 'ccc']);
    expect((await catalog.deviceSettings('east', ['ccc'])).get('ccc')?.suppressed).toEqual(
      new Map([['Temperature', 0]]),
    );
    expect(calls.batch).toHaveLength(1);
    expect(calls.single).toBe(0);
  });

  it('reads only the devices not cached, and all of them again once the entries expire', async () => {
    const { store, calls } = fakeTenancy();
    let now = 1000;
    const catalog = createCatalog({ tenancy: store, ttlMs: 500, clock: () => now });
    await catalog.deviceSettings('east', ['a']);
    await catalog.deviceSettings('east', ['a', 'b']);
    await catalog.deviceSettings('east', ['a', 'b']);
    expect(calls.batch).toEqual([['a'], ['b']]);
    now += 501;
    await catalog.deviceSettings('east', ['a', 'b']);
    expect(calls.batch.at(-1)).toEqual(['a', 'b']);
  });

  it('keeps environments apart', async () => {
    const { store, calls } = fakeTenancy();
    const catalog = createCatalog({ tenancy: store, clock: () => 1000 });
    await catalog.deviceSettings('east', ['a']);
    await catalog.deviceSettings('west', ['a']);
    expect(calls.batch).toEqual([['a'], ['a']]);
  });
});
