/**
 * Numbered run with InfluxDB stopped for 30 s: the gateway keeps acknowledging (the queue is in
 * Redis), jobs wait and retry, and once InfluxDB is back every acknowledged payload is in history
 * exactly once — retried batches land on the same points.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startInflux } from '../../scripts/lib/local-services.ts';
import { sendNumbered } from '../support/generator.ts';
import { settle, NUMBERED_COUNT, brokerFor, expectNoLoss, provisionNumbered } from '../support/fault-run.ts';
import { queueIdle, startPipeline } from '../support/pipeline.ts';

const OUTAGE_MS = 30_000;

describe('numbered run, InfluxDB stopped for 30 s', () => {
  it(
    'acknowledges throughout and stores every acknowledged payload exactly once after the outage',
    { timeout: 240_000 },
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'vigil-numbered-influx-'));
      onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
      const influxd = await startInflux({ dataDir: dir });
      onTestFinished(() => influxd.stop());
      const p = await startPipeline({
        roles: 'gateway,mqtt,worker',
        mqttEnabled: true,
        influxUrl: influxd.url,
        jobBackoffMaxMs: 2000,
      });
      const devices = Array.from({ length: 20 }, (_, i) => `dev-${i}`);
      const { key } = await provisionNumbered(p, 'acme', devices);
      const mqttUrl = await brokerFor(p);
      let outage: Promise<boolean> | undefined;
      const run = await sendNumbered({
        http: { url: p.gatewayUrl, key },
        mqtt: { url: mqttUrl, key },
        devices,
        count: NUMBERED_COUNT,
        baseTimeMs: Date.now() - 3600_000,
        onAck: (acked) => {
          if (outage || acked < NUMBERED_COUNT / 3) return;
          outage = (async () => {
            await influxd.stop();
            await sleep(OUTAGE_MS - 2000);
            const waiting = !(await queueIdle(p)); // jobs wait for InfluxDB, not dropped
            await sleep(2000);
            await influxd.restart();
            return waiting;
          })();
        },
      });
      expect(outage).toBeDefined();
      expect(await outage).toBe(true);
      const check = await settle(p, 'acme', run);
      expectNoLoss('InfluxDB stopped 30 s', run, check);
    },
  );
});
