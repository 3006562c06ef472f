/**
 * A whole Vigil (chosen roles) on the shared private Redis and InfluxDB, with its own key prefix
 * and database, plus an admin handle to provision environments, keys, definitions and devices.
 */
import { onTestFinished } from 'vitest';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil, type RunningVigil, type StartOptions } from '../../src/main.ts';
import type { Redis } from '../../src/redis/connect.ts';
import { createConnections, type Connections } from '../../src/redis/connections.ts';
import { adminDeps, createKeys, type Keys } from '../../src/keys.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import type { Config } from '../../src/config/schema.ts';
import { createInfluxClient, type InfluxClient } from '../../src/history/influx-client.ts';
import { testConfig } from './context.ts';
import { COMFORT_PARSER, COMFORT_SPEC } from '../fixtures/definitions/comfort.ts';

export interface Pipeline {
  config: Config;
  vigil: RunningVigil;
  /** The test's own Redis connections (closed when the test ends): `redis` and any it opens. */
  connections: Connections;
  redis: Redis;
  keys: Keys;
  influx: InfluxClient;
  admin: ReturnType<typeof createTenancyAdmin>;
  gatewayUrl: string;
  apiUrl: string;
  /** The ops port (/healthz, /readyz, /metrics). */
  opsUrl: string;
  /** POSTs a body to a gateway path with a key. */
  post(path: string, key: string, body: string | Buffer, headers?: Record<string, string>): Promise<Response>;
}

export async function startPipeline(
  overrides: Partial<Record<keyof Config, string | number | boolean>> = {},
  options: StartOptions = {},
): Promise<Pipeline> {
  const config = testConfig({
    mqttEnabled: false,
    availabilityCheckMs: 200,
    partitionLeaseMs: 2000,
    jobBackoffMs: 200,
    ...overrides,
  });
  const vigil = await startVigil(config, createLogger(process.env.VIGIL_TEST_LOG ?? 'silent'), options);
  onTestFinished(() => vigil.close());
  const connections = createConnections(config);
  onTestFinished(() => connections.close());
  const redis = connections.command('test');
  const keys = createKeys(config.keyPrefix);
  const influx = createInfluxClient({ url: config.influxUrl, database: config.influxDatabase });
  const gatewayUrl = `http://127.0.0.1:${vigil.ports.gateway}`;
  return {
    config,
    vigil,
    connections,
    redis,
    keys,
    influx,
    admin: createTenancyAdmin(adminDeps(redis, keys)),
    gatewayUrl,
    apiUrl: `http://127.0.0.1:${vigil.ports.api}`,
    opsUrl: `http://127.0.0.1:${vigil.ports.ops}`,
    post: (path, key, body, headers = {}) =>
      fetch(`${gatewayUrl}/${path}/${key}`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json', ...headers },
      }),
  };
}

/** Creates environment `env` with the ComfortSensors definition, devices and an API key. */
export async function provisionComfort(
  p: Pipeline,
  env: string,
  devices: string[],
  opts: { availabilityMinutes?: number; locale?: 'en' | 'nl' } = {},
): Promise<{ key: string }> {
  await p.admin.createEnvironment(env, opts.locale ?? 'en');
  await p.admin.applyDefinition({ kind: 'private', env }, COMFORT_SPEC, COMFORT_PARSER);
  for (const name of devices) {
    await p.admin.createDevice(env, {
      name,
      definitionName: 'ComfortSensors',
      definitionIsPublic: false,
      displayName: name.replace(/_/g, ' '),
      ...(opts.availabilityMinutes !== undefined ? { availabilityMinutes: opts.availabilityMinutes } : {}),
    });
  }
  const { key } = await p.admin.createApiKey(env, 'test');
  return { key };
}

/** Whether no ingest queue entry is waiting or in process (for eventually()). */
export async function queueIdle(p: Pipeline): Promise<boolean> {
  const { countEntries } = await import('../../src/queue/ingest-queue.ts');
  return (await countEntries(p.redis, p.keys, p.config.queuePartitions)) === 0;
}
