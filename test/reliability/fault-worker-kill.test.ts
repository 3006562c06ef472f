/**
 * Numbered run with a worker process SIGKILLed mid-run: its active jobs stall, another worker takes
 * them over, and every acknowledged payload (HTTP 202 or MQTT PUBACK) is in history exactly once.
 */
import { describe, expect, it } from 'vitest';
import { sendNumbered } from '../support/generator.ts';
import { settle, NUMBERED_COUNT, brokerFor, expectNoLoss, provisionNumbered } from '../support/fault-run.ts';
import { startPipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { spawnVigil } from '../support/workers.ts';

describe('numbered run, worker process SIGKILLed', () => {
  it(
    'stores every acknowledged payload exactly once and keeps the newest value as state',
    { timeout: 240_000 },
    async () => {
      const p = await startPipeline({ roles: 'gateway', partitionLeaseMs: 1000 });
      const devices = Array.from({ length: 20 }, (_, i) => `dev-${i}`);
      const { key } = await provisionNumbered(p, 'acme', devices);
      const mqttUrl = await brokerFor(p);
      const workers = [0, 1].map(() =>
        spawnVigil(p.config, { VIGIL_ROLES: 'worker', VIGIL_LOG_LEVEL: 'error' }),
      );
      let killed = false;
      const run = await sendNumbered({
        http: { url: p.gatewayUrl, key },
        mqtt: { url: mqttUrl, key },
        devices,
        count: NUMBERED_COUNT,
        baseTimeMs: Date.now() - 3600_000,
        onAck: async (acked) => {
          if (!killed && acked >= NUMBERED_COUNT / 3) {
            killed = true;
            // Kill it while the workers are busy, not before they have started.
            await eventually(() => p.redis.exists(p.keys.deviceState('acme', 'dev-0')), {
              timeoutMs: 30_000,
              message: 'the workers to process',
            });
            await workers[0]!.kill('SIGKILL');
          }
        },
      });
      expect(killed).toBe(true);
      const check = await settle(p, 'acme', run);
      expectNoLoss('worker SIGKILL', run, check);
    },
  );
});
