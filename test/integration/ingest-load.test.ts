import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mqtt from 'mqtt';
import { startGateway, type RunningGateway } from '../../src/gateway/start-gateway.ts';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { startMqttBroker, type RunningMqttBroker } from '../../src/mqtt/broker.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

let h: IngestHarness;
let ingest: IngestService;
let gateway: RunningGateway;
let broker: RunningMqttBroker;
let keyA: string;
let keyB: string;

beforeAll(async () => {
  h = createIngestHarness();
  ingest = createIngestService(h);
  gateway = await startGateway({ ...h, ingest });
  broker = await startMqttBroker({ ...h, ingest });
  keyA = await h.createApiKey('env-a');
  keyB = await h.createApiKey('env-b');
});

afterAll(async () => {
  await broker?.close();
  await gateway?.close();
  await ingest?.close();
  await h?.close();
});

/** Runs `task(i)` for i in [0, n) with at most `width` in flight. */
async function pool(n: number, width: number, task: (i: number) => Promise<void>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < n) await task(next++);
    }),
  );
}

describe('ingestion under concurrent load', () => {
  it('queues exactly the 10,000 payloads sent at once over HTTP and MQTT, each with its environment and body', async () => {
    const httpCount = 5000;
    const mqttClients = 10;
    const perClient = 500;
    const sendHttp = pool(httpCount, 64, async (i) => {
      const res = await fetch(`http://127.0.0.1:${gateway.port}/gateway/submit/${keyA}`, {
        method: 'POST',
        body: JSON.stringify({ deviceName: 'h', i }),
      });
      expect(res.status).toBe(202);
      await res.arrayBuffer();
    });
    const sendMqtt = Promise.all(
      Array.from({ length: mqttClients }, async (_, c) => {
        const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, {
          reconnectPeriod: 0,
          username: 'device',
          password: keyB,
        });
        try {
          await pool(perClient, 50, (i) =>
            client.publishAsync(`raw/${keyB}/m${c}`, `${c}:${i}`, { qos: 1 }).then(() => undefined),
          );
        } finally {
          await client.endAsync();
        }
      }),
    );
    await Promise.all([sendHttp, sendMqtt]);

    const items = await h.queuedItems();
    expect(items).toHaveLength(httpCount + mqttClients * perClient);
    expect(new Set(items.map((i) => i.id)).size).toBe(items.length);
    const http = items.filter((i) => i.via === 'http');
    expect(http.every((i) => i.env === 'env-a' && i.gateway === 'submit')).toBe(true);
    expect(new Set(http.map((i) => (JSON.parse(i.body) as { i: number }).i)).size).toBe(httpCount);
    const viaMqtt = items.filter((i) => i.via === 'mqtt');
    expect(
      viaMqtt.every(
        (i) => i.env === 'env-b' && i.gateway === 'raw' && i.body.startsWith(i.deviceName?.slice(1) + ':'),
      ),
    ).toBe(true);
    expect(new Set(viaMqtt.map((i) => i.body)).size).toBe(mqttClients * perClient);
    // Micro-batching: far fewer jobs than payloads.
    const backlog = await ingest.producer.sampleBacklog();
    expect(backlog.entries).toBeLessThan(items.length / 2);
    // Every payload counted once, under its environment.
    const perEnv = new Map<string, number>();
    for (const i of items) perEnv.set(i.env, (perEnv.get(i.env) ?? 0) + 1);
    expect(backlog.payloadsByEnv).toEqual(perEnv);
  });
});
