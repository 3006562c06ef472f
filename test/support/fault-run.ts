/**
 * What the numbered fault runs share: an environment set up for numbered payloads, an MQTT broker
 * for the pipeline (main's own when it runs one, else one started here on the same ingestion
 * core's dependencies), the run sizes, and the checks every scenario ends with.
 */
import { expect, onTestFinished } from 'vitest';
import { Registry } from 'prom-client';
import { createLogger } from '../../src/log/logger.ts';
import { startMqttBroker } from '../../src/mqtt/broker.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import type { GeneratorResult, StoredCheck } from './generator.ts';
import { NUMBERED_PREPARSER, reportLine } from './generator.ts';
import { provisionComfort, type Pipeline } from './pipeline.ts';

/** Payloads per scenario: a few thousand by default, ten times that with VIGIL_TEST_LONG=1. */
export const NUMBERED_COUNT = process.env.VIGIL_TEST_LONG ? 30_000 : 3_000;

/** Creates `env` with ComfortSensors devices, the numbered pre-parser (enabled) and an API key. */
export async function provisionNumbered(
  p: Pipeline,
  env: string,
  devices: string[],
): Promise<{ key: string }> {
  const { key } = await provisionComfort(p, env, devices);
  await p.admin.setPreparser(env, NUMBERED_PREPARSER, true);
  return { key };
}

/** mqtt:// URL of a broker feeding this pipeline's queue: main's own, or one started here. */
export async function brokerFor(p: Pipeline): Promise<string> {
  if (p.vigil.ports.mqtt > 0) return `mqtt://127.0.0.1:${p.vigil.ports.mqtt}`;
  const queueConnection = connectRedis(p.config.redisUrl, 'blocking', 'test-mqtt-queue');
  onTestFinished(() => closeRedis(queueConnection));
  const broker = await startMqttBroker({
    config: { ...p.config, mqttPort: 0 },
    keys: p.keys,
    redis: p.redis,
    queueConnection,
    log: createLogger(process.env.VIGIL_TEST_LOG ?? 'silent'),
    metrics: new Registry(),
  });
  onTestFinished(() => broker.close());
  return `mqtt://127.0.0.1:${broker.port}`;
}

/**
 * The promise of every scenario: each acknowledged payload is in history exactly once, nothing
 * unsent or mistimed appears there, the current state is the newest stored value, and every
 * payload the service refused was reported to its sender (and sent again).
 */
export function expectNoLoss(scenario: string, run: GeneratorResult, check: StoredCheck): void {
  console.info(reportLine(scenario, run, check));
  expect(run.counts.otherStatus).toBe(0);
  expect(run.counts.gaveUp).toBe(0);
  expect(run.counts.acknowledged).toBe(run.counts.sent);
  expect(check.missing).toEqual([]);
  expect(check.duplicated).toEqual([]);
  expect(check.phantom).toEqual([]);
  expect(check.stored).toBe(run.counts.sent);
  expect(check.stateMismatches).toEqual([]);
}
