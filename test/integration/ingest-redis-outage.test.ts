import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mqtt from 'mqtt';
import { startRedis, type LocalService } from '../../scripts/lib/local-services.ts';
import { startGateway, type RunningGateway } from '../../src/gateway/start-gateway.ts';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { startMqttBroker, type RunningMqttBroker } from '../../src/mqtt/broker.ts';
import { eventually } from '../support/eventually.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

let dir: string;
let redis: LocalService;
let h: IngestHarness;
let ingest: IngestService;
let gateway: RunningGateway;
let broker: RunningMqttBroker;
let key: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vigil-outage-'));
  // appendfsync always: this test is about the gateway never answering 2xx before Redis has the
  // write. With everysec, Redis postpones its AOF write (up to 2 s) while an earlier fsync is slow
  // and still replies, so a SIGKILL on a busy disk can lose replied writes (docs/guarantees.md).
  redis = await startRedis({ dataDir: dir, appendfsync: 'always' });
  h = createIngestHarness({ redisUrl: redis.url, ingestWriteTimeoutMs: 500, credentialCacheMs: 60_000 });
  ingest = createIngestService(h);
  gateway = await startGateway({ ...h, ingest });
  broker = await startMqttBroker({ ...h, ingest });
  key = await h.createApiKey('acme');
});

afterAll(async () => {
  await broker?.close();
  await gateway?.close();
  await ingest?.close();
  await h?.close();
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

async function post(body: string): Promise<{ status: number; id?: string; code?: string }> {
  const res = await fetch(`http://127.0.0.1:${gateway.port}/gateway/submit/${key}`, {
    method: 'POST',
    body,
    signal: AbortSignal.timeout(5000),
  });
  const json = (await res.json()) as { data?: { id: string }; error?: { code: string } };
  return { status: res.status, id: json.data?.id, code: json.error?.code };
}

describe('ingestion while Redis is down', () => {
  it('answers 503 UNAVAILABLE (never 2xx, never a hang), recovers by itself and loses no accepted payload', async () => {
    expect((await post('{"deviceName":"warm"}')).status).toBe(202);
    const accepted: string[] = [];
    const statuses = new Set<number>();
    let running = true;
    let n = 0;
    const senders = Array.from({ length: 8 }, async () => {
      while (running) {
        const r = await post(JSON.stringify({ deviceName: 'd', n: n++ }));
        statuses.add(r.status);
        if (r.status === 202 && r.id) accepted.push(r.id);
        else expect(r).toMatchObject({ status: 503, code: 'UNAVAILABLE' });
        if (r.status !== 202) await sleep(20); // the senders' own pause before sending again
      }
    });
    await eventually(() => accepted.length >= 10, { message: 'payloads accepted before the outage' });
    await redis.kill();
    await eventually(() => statuses.has(503), { message: 'the senders refused' });
    const during = await post('{"deviceName":"down"}');
    expect(during).toMatchObject({ status: 503, code: 'UNAVAILABLE' });
    await redis.restart();
    await eventually(() => post('{"deviceName":"back"}'), {
      until: (r) => r.status === 202,
      timeoutMs: 10_000,
      intervalMs: 100,
      message: 'the gateway accepting again',
    });
    const acceptedBefore = accepted.length;
    await eventually(() => accepted.length >= acceptedBefore + 10, { message: 'the senders accepted again' });
    running = false;
    await Promise.all(senders);
    expect(statuses).toEqual(new Set([202, 503]));
    const queued = new Set((await h.queuedItems()).map((i) => i.id));
    const missing = accepted.filter((id) => !queued.has(id));
    expect(missing).toEqual([]);
    expect(accepted.length).toBeGreaterThan(20);
  });

  it('closes a CONNECT whose key cannot be checked while Redis is down without refusing it, so the client keeps trying', async () => {
    const fresh = await h.createApiKey('acme'); // not in the key cache: checking it needs Redis
    await redis.kill();
    const client = mqtt.connect(`mqtt://127.0.0.1:${broker.port}`, {
      reconnectPeriod: 100,
      username: 'device',
      password: fresh,
    });
    try {
      const refusals: unknown[] = [];
      let closes = 0;
      client.on('error', (err) => refusals.push((err as Error & { code?: unknown }).code));
      client.on('close', () => closes++);
      const connected = new Promise<void>((resolve) => client.once('connect', () => resolve()));
      await eventually(() => closes >= 3, { timeoutMs: 5000, message: 'three closed attempts' });
      expect(refusals).toEqual([]);
      await redis.restart();
      await connected;
    } finally {
      await client.endAsync(true);
    }
  });

  it('withholds the QoS 1 PUBACK while Redis is down; the client’s redelivery lands once Redis is back', async () => {
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, {
      reconnectPeriod: 200,
      clean: true,
      username: 'device',
      password: key,
    });
    try {
      await client.publishAsync(`gateway/submit/${key}`, '{"deviceName":"m","n":"before"}', { qos: 1 });
      await redis.kill();
      let acked = false;
      // The broker closes the connection when the write fails, without PUBACK.
      const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
      const publish = client
        .publishAsync(`gateway/submit/${key}`, '{"deviceName":"m","n":"during"}', { qos: 1 })
        .then(() => {
          acked = true;
        });
      await closed;
      expect(acked).toBe(false);
      await redis.restart();
      await publish;
      const bodies = (await h.queuedItems()).map((i) => i.body);
      expect(bodies).toContain('{"deviceName":"m","n":"during"}');
    } finally {
      await client.endAsync(true);
    }
  });
});
