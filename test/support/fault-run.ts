/**
 * What the numbered fault runs share: an environment set up for numbered payloads, an MQTT broker
 * for the pipeline (main's own when it runs one, else one started here on the same ingestion
 * core's dependencies), the run sizes, and the checks every scenario ends with.
 */
import { expect, onTestFinished } from 'vitest';
import { listDeadLetters } from '../../src/queue/ingest-queue.ts';
import { Registry } from 'prom-client';
import { createLogger } from '../../src/log/logger.ts';
import { startMqttBroker } from '../../src/mqtt/broker.ts';
import { closeRedis, connectRedis } from '../../src/redis/connect.ts';
import type { GeneratorResult, StoredCheck } from './generator.ts';
import { NUMBERED_CO2_RULES, NUMBERED_PREPARSER, reportLine, verifyNumbered } from './generator.ts';
import { provisionComfort, queueIdle, type Pipeline } from './pipeline.ts';
import { eventually } from './eventually.ts';
import { readEntry } from '../../src/ingest/ingest-log.ts';
import { readRecentPayload } from '../../src/recent-payloads/recent-payload-codec.ts';

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
  for (const device of devices) await p.admin.setThreshold(env, device, 'CO2', NUMBERED_CO2_RULES);
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
 * Waits until the queue is idle and history holds as many numbered values as were acknowledged,
 * or until `timeoutMs`; then returns what history and state hold (a shortfall shows in the check).
 */
export async function settle(
  p: Pipeline,
  env: string,
  run: GeneratorResult,
  timeoutMs = 120_000,
): Promise<StoredCheck> {
  const deadline = Date.now() + timeoutMs;
  await eventually(() => queueIdle(p), { timeoutMs, message: 'the queue to drain' }).catch(
    async (err: unknown) => {
      console.info(`queue not drained: ${JSON.stringify(await queueState(p))}`);
      throw err;
    },
  );
  // Past the deadline, the check as it stands: expectNoLoss then names each missing payload.
  const check = await eventually(() => verifyNumbered(p, env, run), {
    until: (c) => c.stored >= run.counts.acknowledged,
    timeoutMs: Math.max(0, deadline - Date.now()),
    intervalMs: 250,
    message: 'every acknowledged payload in history',
  }).catch(() => verifyNumbered(p, env, run));
  const failed = await failedJobs(p);
  if (failed.length > 0) console.info(`failed jobs: ${JSON.stringify(failed)}`);
  if (check.missing.length > 0) console.info(`ingestion log of ${env}: ${await logSummary(p, env)}`);
  return { ...check, deadLettered: failed.reduce((n, d) => n + d.items, 0) };
}

/** Per partition: entries, pending entries, the lease, and the crash counts: what a stuck queue holds. */
async function queueState(p: Pipeline): Promise<unknown[]> {
  const out: unknown[] = [];
  for (let n = 0; n < p.config.queuePartitions; n++) {
    const stream = p.keys.ingestStream(n);
    out.push({
      partition: n,
      entries: await p.redis.xlen(stream),
      pending: ((await p.redis.xpending(stream, 'vigil')) as [number])[0],
      lease: await p.redis.get(p.keys.partitionLease(n)),
      taken: await p.redis.hgetall(p.keys.takenCounts(n)),
    });
  }
  return out;
}

/** The codes of the environment's ingestion log with their counts and one message each. */
async function logSummary(p: Pipeline, env: string): Promise<string> {
  const counts = new Map<string, { n: number; message: string | null }>();
  for (const line of await p.redis.lrange(p.keys.ingestLog(env), 0, -1)) {
    const e = readEntry(line);
    const key = e.code ?? 'accepted';
    const c = counts.get(key) ?? { n: 0, message: e.message };
    c.n += 1;
    counts.set(key, c);
  }
  return JSON.stringify(Object.fromEntries(counts));
}

/** Ingest ids that have more than one entry in the environment's ingestion log (each payload gets one). */
export async function ingestLogDuplicates(p: Pipeline, env: string): Promise<string[]> {
  const counts = new Map<string, number>();
  for (const line of await p.redis.lrange(p.keys.ingestLog(env), 0, -1)) {
    const id = readEntry(line).ingestId;
    counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return [...counts].filter(([, n]) => n > 1).map(([id, n]) => `${id} ×${n}`);
}

/**
 * Payloads kept twice in a device's recent payloads (as stored, before reading leaves repeats
 * out): the worker keeps those of acknowledged steps only, so a stale step adds none.
 */
export async function recentPayloadDuplicates(p: Pipeline, env: string, devices: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const device of devices) {
    const seen = new Set<string>();
    for (const text of await p.redis.lrange(p.keys.recentPayloads(env, device), 0, -1)) {
      const id = readRecentPayload(text)?.ingestId ?? text;
      if (seen.has(id)) out.push(`${device} ${id}`);
      seen.add(id);
    }
  }
  return out;
}

/** The worker token of each partition lease held now (a lease's value is `<token>:<fence>`). */
export async function leaseHolders(p: Pipeline): Promise<string[]> {
  const values = await p.redis.mget(
    Array.from({ length: p.config.queuePartitions }, (_, n) => p.keys.partitionLease(n)),
  );
  return values.map((v) => v?.split(':')[0] ?? '');
}

/** Queue entries the workers gave up on (in the dead-letter stream): id, reason, payload count. */
async function failedJobs(p: Pipeline): Promise<{ id: string; reason: string; items: number }[]> {
  return listDeadLetters(p.redis, p.keys);
}

/**
 * The promise of every scenario: each acknowledged payload is in history exactly once, nothing
 * unsent or mistimed appears there, the current state is the newest stored value, and every
 * payload the service refused was reported to its sender (and sent again).
 */
export function expectNoLoss(scenario: string, run: GeneratorResult, check: StoredCheck): void {
  console.info(reportLine(scenario, run, check));
  expect(run.counts.otherStatus).toBe(0);
  // Every payload is acknowledged in the end: a refused one is sent again (HTTP 503, or a publish
  // mqtt.js failed after the broker closed its connection), as a device does.
  expect(run.counts.gaveUp).toBe(0);
  expect(run.counts.acknowledged + run.counts.gaveUp).toBe(run.counts.sent);
  expect(check.missing.slice(0, 50)).toEqual([]);
  expect(check.duplicated.slice(0, 50)).toEqual([]);
  expect(check.phantom.slice(0, 50)).toEqual([]);
  expect(check.stored).toBeGreaterThanOrEqual(run.counts.acknowledged);
  expect(check.stored).toBeLessThanOrEqual(run.counts.sent);
  expect(check.stateMismatches).toEqual([]);
  expect(check.transitionProblems.slice(0, 20)).toEqual([]);
}
