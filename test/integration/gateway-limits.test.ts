import { describe, expect, it, onTestFinished } from 'vitest';
import { startGateway } from '../../src/gateway/start-gateway.ts';
import { createIngestService } from '../../src/ingest/ingest-service.ts';
import { createIngestHarness } from './ingest-harness.ts';

/** The rate limits' clock: it stands still, so a test's requests all fall in the same instant. */
const HELD_CLOCK_MS = Date.UTC(2026, 0, 1);

async function setUp(overrides: Parameters<typeof createIngestHarness>[0]) {
  const h = createIngestHarness(overrides);
  const ingest = createIngestService({ ...h, clock: () => HELD_CLOCK_MS });
  const gateway = await startGateway({ ...h, ingest });
  onTestFinished(async () => {
    await gateway.close();
    await ingest.close();
    await h.close();
  });
  const post = (key: string) =>
    fetch(`http://127.0.0.1:${gateway.port}/raw/${key}?deviceName=d`, { method: 'POST', body: 'x' });
  return { h, ingest, post };
}

describe('gateway limits', () => {
  it('answers 429 RATE_LIMITED with Retry-After once a key exceeds its rate, other keys unaffected', async () => {
    const { h, post } = await setUp({ rateLimitPerSecond: 3 });
    const a = await h.createApiKey('acme');
    const b = await h.createApiKey('acme');
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await post(a)).status);
    expect(statuses).toEqual([202, 202, 202, 429]);
    const limited = await post(a);
    expect(limited.status).toBe(429);
    expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await limited.json()).toMatchObject({ status: 'error', error: { code: 'RATE_LIMITED' } });
    expect((await post(b)).status).toBe(202);
  });

  it('answers 503 BACKLOG_FULL with Retry-After above the high-water mark, and accepts again once it drains', async () => {
    const { h, ingest, post } = await setUp({
      backlogHighWater: 5,
      backlogCheckMs: 60_000,
      batchMaxPayloads: 1,
    });
    const key = await h.createApiKey('acme');
    for (let i = 0; i < 8; i++) expect((await post(key)).status).toBe(202);
    await ingest.backlog.sample();
    const full = await post(key);
    expect(full.status).toBe(503);
    expect(full.headers.get('retry-after')).toBeTruthy();
    expect(await full.json()).toMatchObject({ error: { code: 'BACKLOG_FULL' } });
    // Drained: the queue's streams are emptied.
    await h.redis.del(...Array.from({ length: h.config.queuePartitions }, (_, n) => h.keys.ingestStream(n)));
    await ingest.backlog.sample();
    expect((await post(key)).status).toBe(202);
  });
});
