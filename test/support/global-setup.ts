/**
 * Starts one private Redis and one private InfluxDB for the integration run, on free loopback
 * ports with temporary data directories, and removes them afterwards. Test files isolate
 * themselves by key prefix and database name (see `test/support/context.ts`); tests that
 * kill or restart a server start their own with the same helpers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { startInflux, startRedis } from '../../scripts/lib/local-services.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    redisUrl: string;
    influxUrl: string;
  }
}

export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-test-'));
  const [redis, influx] = await Promise.all([
    startRedis({ dataDir: join(dir, 'redis') }),
    startInflux({ dataDir: join(dir, 'influx') }),
  ]);
  project.provide('redisUrl', redis.url);
  project.provide('influxUrl', influx.url);
  return async () => {
    await Promise.allSettled([redis.stop(), influx.stop()]);
    rmSync(dir, { recursive: true, force: true });
  };
}
