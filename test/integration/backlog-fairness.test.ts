/**
 * The backlog is shared fairly between environments: one that floods the gateway while the
 * workers are behind gets BACKLOG_FULL, the others keep being accepted; and the per-environment
 * count the decision rests on returns to nothing once the queue has drained, whichever way its
 * entries left it (processed, dead-lettered, requeued and processed).
 */
import { Registry } from 'prom-client';
import { describe, expect, it, onTestFinished } from 'vitest';
import { startGateway } from '../../src/gateway/start-gateway.ts';
import { createConnections } from '../../src/redis/connections.ts';
import { createIngestService } from '../../src/ingest/ingest-service.ts';
import { countEntries, listDeadLetters, requeueDeadLetters } from '../../src/queue/ingest-queue.ts';
import { startWorker } from '../../src/worker/start-worker.ts';
import { eventually } from '../support/eventually.ts';
import { createIngestHarness } from './ingest-harness.ts';

const HIGH_WATER = 20;

async function setUp(overrides: Parameters<typeof createIngestHarness>[0] = {}) {
  const h = createIngestHarness({
    backlogHighWater: HIGH_WATER,
    backlogCheckMs: 60_000, // sampled by the test
    batchMaxPayloads: 1,
    jobAttempts: 2,
    jobBackoffMs: 10,
    jobBackoffMaxMs: 20,
    ...overrides,
  });
  const ingest = createIngestService(h);
  const gateway = await startGateway({ ...h, ingest });
  onTestFinished(async () => {
    await gateway.close();
    await ingest.close();
    await h.close();
  });
  /** Posts one raw payload and takes a backlog sample; resolves with the status and error code. */
  const post = async (key: string, body: string) => {
    const res = await fetch(`http://127.0.0.1:${gateway.port}/raw/${key}?deviceName=d-${body}`, {
      method: 'POST',
      body,
    });
    const answer = {
      status: res.status,
      retryAfter: res.headers.get('retry-after'),
      code: res.status === 202 ? undefined : ((await res.json()) as { error: { code: string } }).error.code,
    };
    if (res.status === 202) await res.arrayBuffer();
    await ingest.backlog.sample();
    return answer;
  };
  const counts = () => h.redis.hgetall(h.keys.queueBacklog());
  const drained = () =>
    eventually(async () => (await countEntries(h.redis, h.keys, h.config.queuePartitions)) === 0, {
      timeoutMs: 15_000,
      message: 'the queue drained',
    });
  /** A worker whose processing fails for the payload `poison` while `poisonFails()`. */
  const startTestWorker = async (poisonFails: () => boolean) => {
    const connections = createConnections(h.config);
    const worker = await startWorker({
      config: h.config,
      connections,
      keys: h.keys,
      log: h.log,
      metrics: new Registry(),
      process: (items) =>
        poisonFails() && items.some((i) => i.body === 'poison')
          ? Promise.reject(new Error('cannot process poison'))
          : Promise.resolve({ payloads: items.length, values: 0, staleValues: 0 }),
    });
    onTestFinished(async () => {
      await worker.close();
      await connections.close();
    });
    return worker;
  };
  return { h, ingest, post, counts, drained, startTestWorker };
}

describe('backlog shared between environments', () => {
  it('refuses the environment that floods the backlog, not the others, and counts back to nothing', async () => {
    const { h, ingest, post, counts, drained, startTestWorker } = await setUp();
    const flooder = await h.createApiKey('flood');
    const quiet = await h.createApiKey('quiet');

    // No worker yet: the queue only grows.
    let accepted = 0;
    let refused: Awaited<ReturnType<typeof post>> | undefined;
    while (!refused && accepted < 10 * HIGH_WATER) {
      const answer = await post(flooder, `f${accepted}`);
      if (answer.status === 202) accepted++;
      else refused = answer;
    }
    expect(refused).toMatchObject({ status: 503, code: 'BACKLOG_FULL', retryAfter: '5' });
    expect(accepted).toBeGreaterThanOrEqual(HIGH_WATER);
    expect(await post(quiet, 'q1')).toMatchObject({ status: 202 });
    expect(await post(quiet, 'poison')).toMatchObject({ status: 202 });
    expect(await post(flooder, 'again')).toMatchObject({ status: 503, code: 'BACKLOG_FULL' });
    expect(await counts()).toEqual({ flood: String(accepted), quiet: '2' });

    // The worker processes everything but the poison payload, whose entry is dead-lettered.
    const worker = await startTestWorker(() => true);
    await drained();
    expect(await listDeadLetters(h.redis, h.keys)).toHaveLength(1);
    // Taken off entry by entry as they left the queue (a sample would clear what is left).
    expect(await counts()).toEqual({});
    await ingest.backlog.sample();
    expect(await post(flooder, 'after')).toMatchObject({ status: 202 });
    await drained();
    await worker.close();

    expect(await requeueDeadLetters(h.redis, h.keys)).toHaveLength(1);
    expect(await counts()).toEqual({ quiet: '1' });
    await startTestWorker(() => false);
    await drained();
    expect(await listDeadLetters(h.redis, h.keys)).toEqual([]);
    expect(await counts()).toEqual({});
  });

  it('refuses an environment over its own cap even while the whole backlog is below the mark', async () => {
    const { h, post } = await setUp({ backlogEnvHighWater: 3 });
    const busy = await h.createApiKey('busy');
    const other = await h.createApiKey('other');
    const answers = [];
    for (let i = 0; i < 5; i++) answers.push((await post(busy, `b${i}`)).status);
    expect(answers).toEqual([202, 202, 202, 202, 503]);
    expect(await post(other, 'o1')).toMatchObject({ status: 202 });
  });
});
