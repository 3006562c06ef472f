/**
 * The process's one Redis connection factory: every connection a process opens comes from it, and
 * closing it (the last step of a stop) leaves none open. A private Redis per test: its client list
 * then holds this test's connections only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startRedis } from '../../scripts/lib/local-services.ts';
import { createLogger } from '../../src/log/logger.ts';
import { startVigil } from '../../src/main.ts';
import { closeRedis, connectRedis, type Redis } from '../../src/redis/connect.ts';
import { createConnections } from '../../src/redis/connections.ts';
import { testConfig } from '../support/context.ts';
import { eventually } from '../support/eventually.ts';

const OBSERVER = 'test-observer';

/** A private Redis and a connection that watches its client list. */
async function privateRedis(): Promise<{ url: string; observer: Redis }> {
  const dir = mkdtempSync(join(tmpdir(), 'vigil-connections-'));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  const server = await startRedis({ dataDir: dir });
  onTestFinished(() => server.stop());
  const observer = connectRedis(server.url, 'command', OBSERVER);
  onTestFinished(() => closeRedis(observer));
  return { url: server.url, observer };
}

/** The names of the clients connected, but the observer's. */
async function clientNames(observer: Redis): Promise<string[]> {
  const list = String(await observer.call('CLIENT', 'LIST'));
  return list
    .split('\n')
    .map((line) => / name=(\S*)/.exec(line)?.[1])
    .filter((name): name is string => name !== undefined && name !== OBSERVER)
    .sort();
}

describe('Redis connections', () => {
  it('closes every connection the factory opened, and opens none once closed', async () => {
    const { url, observer } = await privateRedis();
    const connections = createConnections({ redisUrl: url });
    onTestFinished(() => connections.close());
    connections.command('one');
    connections.reads('two');
    connections.blocking('three');
    await eventually(async () => (await clientNames(observer)).length === 3, {
      message: 'the three connections open',
    });
    expect(await clientNames(observer)).toEqual(['one', 'three', 'two']);

    await connections.close();
    await eventually(async () => (await clientNames(observer)).length === 0, {
      message: 'every connection closed',
    });
    expect(() => connections.command('four')).toThrow(/after the connections were closed/);
  });

  it('leaves none of its connections open once a Vigil of every role stopped', async () => {
    const { url, observer } = await privateRedis();
    const config = testConfig({ redisUrl: url, mqttEnabled: false });
    const vigil = await startVigil(config, createLogger('silent'));
    onTestFinished(() => vigil.close());
    const opened = ['vigil-main', 'vigil-queue', 'vigil-api-reads', 'vigil-rollups', 'vigil-notify-worker'];
    await eventually(() => clientNames(observer), {
      until: (names) => opened.every((name) => names.includes(name)),
      message: "the roles' connections open",
    });

    await vigil.close();
    // BullMQ's own blocking connections are its to close; the rest were the factory's.
    await eventually(async () => (await clientNames(observer)).length === 0, {
      message: 'every connection closed',
    });
  });
});
