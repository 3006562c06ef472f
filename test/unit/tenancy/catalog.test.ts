import { describe, expect, it } from 'vitest';
import { createCatalog } from '../../../src/tenancy/catalog.ts';
import type { DeviceSettings, TenancyStore } from '../../../src/tenancy/tenancy-store.ts';

/** A tenancy store that answers only device settings and records the reads. */
function fakeTenancy() {
  const calls = { batch: [] as string[][], single: 0 };
  /** How often each `env/device` was read. */
  const reads = () => {
    const counts: Record<string, number> = {};
    for (const read of calls.batch) for (const d of read) counts[d] = (counts[d] ?? 0) + 1;
    return counts;
  };
  const settingsOf = (device: string): DeviceSettings => ({
    overrides: new Map([['CO2', { rules: [{ status: 'WARNING', above: device.length }], hysteresis: 0 }]]),
    suppressed: new Map([['Temperature', 0]]),
  });
  const store = {
    getDeviceSettings(env: string, devices: string[]) {
      calls.batch.push(devices.map((d) => `${env}/${d}`));
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
  return { store, calls, reads, settingsOf };
}

describe('catalog: device settings', () => {
  it('reads the settings of a whole step in one call, then serves them from the cache', async () => {
    const { store, calls, reads, settingsOf } = fakeTenancy();
    const catalog = createCatalog({ tenancy: store, clock: () => 1000 });
    const got = await catalog.deviceSettings('east', ['a', 'bb', 'a', 'ccc']);
    expect(calls.batch).toHaveLength(1);
    expect(reads()).toEqual({ 'east/a': 1, 'east/bb': 1, 'east/ccc': 1 });
    expect(got.get('bb')).toEqual(settingsOf('bb'));
    expect([...got.keys()]).toEqual(['a', 'bb', 'ccc']);
    expect((await catalog.deviceSettings('east', ['ccc'])).get('ccc')?.suppressed).toEqual(
      new Map([['Temperature', 0]]),
    );
    expect(calls.batch).toHaveLength(1);
    expect(calls.single).toBe(0);
  });

  it('reads only the devices not cached, and all of them again once the entries expire', async () => {
    const { store, reads } = fakeTenancy();
    let now = 1000;
    const catalog = createCatalog({ tenancy: store, ttlMs: 500, clock: () => now });
    await catalog.deviceSettings('east', ['a']);
    await catalog.deviceSettings('east', ['a', 'b']);
    await catalog.deviceSettings('east', ['a', 'b']);
    expect(reads()).toEqual({ 'east/a': 1, 'east/b': 1 });
    now += 501;
    await catalog.deviceSettings('east', ['a', 'b']);
    expect(reads()).toEqual({ 'east/a': 2, 'east/b': 2 });
  });

  it('keeps environments apart', async () => {
    const { store, reads } = fakeTenancy();
    const catalog = createCatalog({ tenancy: store, clock: () => 1000 });
    await catalog.deviceSettings('east', ['a']);
    await catalog.deviceSettings('west', ['a']);
    expect(reads()).toEqual({ 'east/a': 1, 'west/a': 1 });
  });
});
