/** Losing a device's contact in a test: the scheduler's own step, on a clock past the deadline. */
import { expect } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { startAvailabilityScheduler } from '../../src/scheduler/availability-scheduler.ts';
import { createStateStore } from '../../src/state/state-store.ts';
import { createCatalog } from '../../src/tenancy/catalog.ts';
import { loginLimitsOf } from '../../src/tenancy/login.ts';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import type { Pipeline } from './pipeline.ts';

/** Marks `device` of `env` lost the way the scheduler does, on a clock past its deadline. */
export async function loseContact(p: Pipeline, env: string, device: string): Promise<void> {
  const deadline = Number(await p.redis.zscore(p.keys.availabilityDeadlines(), `${env}\n${device}`));
  const scheduler = startAvailabilityScheduler({
    redis: p.redis,
    keys: p.keys,
    state: createStateStore({ redis: p.redis, keys: p.keys, eventsCap: 1000 }),
    catalog: createCatalog({
      tenancy: createTenancyStore({ redis: p.redis, keys: p.keys, login: loginLimitsOf(p.config) }),
    }),
    log: createLogger('silent'),
    intervalMs: 1000,
    clock: () => deadline + 1,
    autoStart: false,
  });
  expect(await scheduler.tick()).toBe(1);
  await scheduler.close();
}
