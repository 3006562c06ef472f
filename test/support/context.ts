/**
 * Per-test-file isolation on the shared private Redis and InfluxDB of the integration run: a
 * unique key prefix (so queues and state never collide) and a unique InfluxDB database.
 */
import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import { loadConfig } from '../../src/config/load-config.ts';
import type { Config } from '../../src/config/schema.ts';

export function testId(): string {
  return `t${randomBytes(4).toString('hex')}`;
}

/** A Config for a test: private servers, unique prefix and database, ephemeral ports, quiet logs. */
export function testConfig(overrides: Partial<Record<keyof Config, string | number | boolean>> = {}): Config {
  const id = testId();
  return loadConfig(
    {},
    {
      redisUrl: inject('redisUrl'),
      influxUrl: inject('influxUrl'),
      keyPrefix: id,
      influxDatabase: id,
      host: '127.0.0.1',
      apiPort: 0,
      gatewayPort: 0,
      mqttPort: 0,
      opsPort: 0,
      logLevel: 'silent',
      ...overrides,
    },
  );
}
