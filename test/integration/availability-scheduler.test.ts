/**
 * The scheduler with lazily moved deadlines: due entries of devices with contact since move to
 * last contact + timeout in one round trip and create nothing; silent devices get their event.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { startAvailabilityScheduler } from '../../src/scheduler/availability-scheduler.ts';
import { createStateStore, type DeviceReadings } from '../../src/state/state-store.ts';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import { createCatalog } from '../../src/tenancy/catalog.ts';
import { provisionComfort, startPipeline } from '../support/pipeline.ts';

const contact = (device: string, ms: number): DeviceReadings => ({
  env: 'acme',
  device,
  displayName: device,
  contactMs: ms,
  timeoutMs: 60_000,
  sensors: new Map(),
  values: [],
});

describe('availability scheduler', () => {
  it('moves the deadlines of devices heard from since, in one pass, and marks only the silent one', async () => {
    const p = await startPipeline({ roles: 'gateway' });
    await provisionComfort(p, 'acme', ['d1', 'd2', 'd3']);
    const state = createStateStore({ redis: p.redis, keys: p.keys, eventsCap: 1000 });
    let now = 0;
    const scheduler = startAvailabilityScheduler({
      redis: p.redis,
      keys: p.keys,
      state,
      catalog: createCatalog({
        tenancy: createTenancyStore({
          redis: p.redis,
          keys: p.keys,
          login: { maxFailures: 5, maxFailuresPerUser: 50, maxFailuresPerAddress: 100, lockSeconds: 60 },
        }),
      }),
      log: createLogger('silent'),
      intervalMs: 1000,
      clock: () => now,
      autoStart: false,
    });
    const deadline = (d: string) => p.redis.zscore(p.keys.availabilityDeadlines(), `acme\n${d}`);
    await state.applyReadings(
      ['d1', 'd2', 'd3'].map((d) => contact(d, 1000)),
      1000,
    );
    await state.applyReadings(
      ['d1', 'd2'].map((d) => contact(d, 30_000)),
      30_000,
    );
    expect(await deadline('d1')).toBe('61000'); // not rewritten by the later contact

    now = 61_500;
    expect(await scheduler.tick()).toBe(1);
    expect([await deadline('d1'), await deadline('d2'), await deadline('d3')]).toEqual([
      '90000',
      '90000',
      null,
    ]);
    const lost = (await p.redis.zrange(p.keys.envEvents('acme'), 0, -1)).map(
      (j) => JSON.parse(j) as { deviceName: string; id: string },
    );
    expect(lost.map((e) => [e.deviceName, e.id])).toEqual([['d3', 'acme/d3/availability-lost/61000']]);

    now = 95_000;
    expect(await scheduler.tick()).toBe(2);
    expect(await p.redis.zcard(p.keys.availabilityDeadlines())).toBe(0);
    expect(await p.redis.zcard(p.keys.envEvents('acme'))).toBe(3);
    await scheduler.close();
  });
});
