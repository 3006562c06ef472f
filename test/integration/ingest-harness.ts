/**
 * Shared set-up of the ingestion tests: the dependencies of the gateway/broker on the test Redis
 * (or a private one), API keys and pre-parsers written in the tenancy layout, and a reader of what
 * reached the queue.
 */
import { randomBytes } from 'node:crypto';
import { sha256Hex as sha256 } from '../../src/lib/sha256.ts';
import { Registry } from 'prom-client';
import type { Config } from '../../src/config/schema.ts';
import { createLogger } from '../../src/log/logger.ts';
import { queuedItems } from '../../src/queue/ingest-queue.ts';
import type { IngestItem } from '../../src/domain/ingest-item.ts';
import { closeRedis, connectRedis, type Redis } from '../../src/redis/connect.ts';
import { createKeys, type Keys } from '../../src/keys.ts';
import { testConfig } from '../support/context.ts';

export interface IngestHarness {
  config: Config;
  keys: Keys;
  redis: Redis;
  queueConnection: Redis;
  log: ReturnType<typeof createLogger>;
  metrics: Registry;
  /** Writes a new API key of `env` the way the tenancy CLI does; returns the key. */
  createApiKey(env: string): Promise<string>;
  revokeApiKey(key: string): Promise<void>;
  /** Sets (or with `null` removes) the environment's pre-parser. */
  setPreparser(env: string, state: 'enabled' | 'disabled' | null): Promise<void>;
  /** Every item queued (not yet processed), in acceptance order. */
  queuedItems(): Promise<IngestItem[]>;
  close(): Promise<void>;
}

export { sha256 };

export function createIngestHarness(overrides: Parameters<typeof testConfig>[0] = {}): IngestHarness {
  const config = testConfig({ credentialCacheMs: 100, ...overrides });
  const keys = createKeys(config.keyPrefix);
  const redis = connectRedis(config.redisUrl, 'command', 'test-ingest');
  const queueConnection = connectRedis(config.redisUrl, 'blocking', 'test-ingest-queue');
  const reader = connectRedis(config.redisUrl, 'blocking', 'test-reader');
  return {
    config,
    keys,
    redis,
    queueConnection,
    log: createLogger('silent'),
    metrics: new Registry(),
    async createApiKey(env) {
      const key = `vk_${randomBytes(32).toString('base64url')}`;
      await reader.hset(keys.apiKey(sha256(key)), {
        env,
        id: sha256(key).slice(0, 12),
        name: 'test',
        createdUTC: new Date().toISOString(),
      });
      return key;
    },
    async revokeApiKey(key) {
      await reader.del(keys.apiKey(sha256(key)));
    },
    async setPreparser(env, state) {
      if (state === null) await reader.del(keys.preparser(env));
      else {
        await reader.hset(keys.preparser(env), {
          source: 'function parsePayload(s) { return JSON.parse(s); }',
          enabled: state === 'enabled' ? '1' : '0',
          revision: '1',
        });
      }
    },
    async queuedItems() {
      // Entries of all partitions, in acceptance order (items carry their receive time and time-sortable id).
      return (await queuedItems(reader, keys, config.queuePartitions)).sort(
        (a, b) => a.receivedMs - b.receivedMs || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0),
      );
    },
    async close() {
      await Promise.all([closeRedis(redis), closeRedis(queueConnection), closeRedis(reader)]);
    },
  };
}
