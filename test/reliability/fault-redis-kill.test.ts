/**
 * Numbered run with Redis SIGKILLed and restarted from its AOF (appendfsync always): while it is
 * down the gateway answers 503 and the broker withholds PUBACKs, devices send again, and every
 * payload acknowledged before or after the crash is in history exactly once.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startRedis } from '../../scripts/lib/local-services.ts';
import { sendNumbered } from '../support/generator.ts';
import { settle, NUMBERED_COUNT, brokerFor, expectNoLoss, provisionNumbered } from '../support/fault-run.ts';
import { startPipeline } from '../support/pipeline.ts';

const DOWN_MS = 1500;

describe('numbered run, Redis SIGKILLed and restarted from its AOF', () => {
  it(
    'refuses with 503 while Redis is down and loses no acknowledged payload',
    { timeout: 240_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'vigil-numbered-redis-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      // always, not everysec: with everysec a Redis killed while a slow disk has it postponing its
      // AOF write loses what it replied meanwhile (docs/guarantees.md), which a loaded host shows.
      const redis = await startRedis({ dataDir: dir, appendfsync: 'always' });
      onTestFinished(() => redis.stop());
      const p = await startPipeline({
        roles: 'gateway,mqtt,worker',
        mqttEnabled: true,
        redisUrl: redis.url,
        ingestWriteTimeoutMs: 500,
        jobBackoffMaxMs: 1000,
      });
      const devices = Array.from({ length: 20 }, (_, i) => `dev-${i}`);
      const { key } = await provisionNumbered(p, 'acme', devices);
      const mqttUrl = await brokerFor(p);
      let crash: Promise<void> | undefined;
      const run = await sendNumbered({
        http: { url: p.gatewayUrl, key },
        mqtt: { url: mqttUrl, key },
        devices,
        count: NUMBERED_COUNT,
        baseTimeMs: Date.now() - 3600_000,
        onAck: (acked) => {
          if (crash || acked < NUMBERED_COUNT / 3) return;
          crash = (async () => {
            await redis.kill();
            await sleep(DOWN_MS);
            await redis.restart();
          })();
        },
      });
      expect(crash).toBeDefined();
      await crash;
      expect(run.counts.refused + run.counts.unanswered).toBeGreaterThan(0);
      const check = await settle(p, 'acme', run);
      expectNoLoss('Redis SIGKILL + AOF restart', run, check);
    },
  );
});
