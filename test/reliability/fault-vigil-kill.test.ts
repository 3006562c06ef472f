/**
 * Numbered run with the whole Vigil process (gateway, MQTT, worker) SIGKILLed mid-run and started
 * again by the test: devices see refused connections and send again; payloads acknowledged before
 * the kill are in Redis already, and every one lands in history exactly once.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { freePort, isListening } from '../../scripts/lib/local-services.ts';
import { sendNumbered } from '../support/generator.ts';
import { settle, NUMBERED_COUNT, expectNoLoss, provisionNumbered } from '../support/fault-run.ts';
import { startPipeline } from '../support/pipeline.ts';
import { eventually } from '../support/eventually.ts';
import { spawnVigil, type ChildVigil } from '../support/workers.ts';

describe('numbered run, whole Vigil process SIGKILLed', () => {
  it('stores every acknowledged payload exactly once after a restart', { timeout: 240_000 }, async () => {
    // The in-process pipeline only provides the admin handle and the config (scheduler role).
    const p = await startPipeline({ roles: 'scheduler', partitionLeaseMs: 1000 });
    const devices = Array.from({ length: 20 }, (_, i) => `dev-${i}`);
    const { key } = await provisionNumbered(p, 'acme', devices);
    const gatewayPort = await freePort();
    const mqttPort = await freePort();
    const start = async (): Promise<ChildVigil> => {
      const child = spawnVigil(p.config, {
        VIGIL_ROLES: 'gateway,mqtt,worker',
        VIGIL_MQTT_ENABLED: 'true',
        VIGIL_GATEWAY_PORT: String(gatewayPort),
        VIGIL_MQTT_PORT: String(mqttPort),
        VIGIL_LOG_LEVEL: 'error',
      });
      await eventually(() => isListening(gatewayPort), { timeoutMs: 30_000, message: 'Vigil' });
      return child;
    };
    let vigil = await start();
    // MQTT joins the run once main.ts starts the broker for the mqtt role.
    const withMqtt = await isListening(mqttPort);
    let restarted: Promise<void> | undefined;
    const run = await sendNumbered({
      http: { url: `http://127.0.0.1:${gatewayPort}`, key },
      ...(withMqtt ? { mqtt: { url: `mqtt://127.0.0.1:${mqttPort}`, key } } : {}),
      devices,
      count: NUMBERED_COUNT,
      baseTimeMs: Date.now() - 3600_000,
      onAck: (acked) => {
        if (restarted || acked < NUMBERED_COUNT / 3) return;
        restarted = (async () => {
          await vigil.kill('SIGKILL');
          await sleep(500); // down for half a second: part of the fault
          vigil = await start();
        })();
      },
    });
    expect(restarted).toBeDefined();
    await restarted;
    expect(run.counts.unanswered).toBeGreaterThan(0);
    const check = await settle(p, 'acme', run);
    expectNoLoss(`whole-process SIGKILL${withMqtt ? '' : ' (HTTP only)'}`, run, check);
    await vigil.kill('SIGTERM');
  });
});
