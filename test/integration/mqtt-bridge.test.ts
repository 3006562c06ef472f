import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import mqtt, { type MqttClient } from 'mqtt';
import { pino } from 'pino';
import { startRedis } from '../../scripts/lib/local-services.ts';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { startMqttBridge, type RunningBridge } from '../../src/mqtt/bridge.ts';
import { eventually } from '../support/eventually.ts';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

let dir: string;
let mosquitto: Mosquitto;
let brokerUrl: string;
let h: IngestHarness;
let ingest: IngestService;
let bridge: RunningBridge;
let device: MqttClient;
let key: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vigil-bridge-'));
  mosquitto = await startMosquitto(dir);
  brokerUrl = mosquitto.url;
  h = createIngestHarness({
    mqttBridgeUrl: brokerUrl,
    mqttBridgeShared: true,
    mqttBridgeConnections: 3,
    mqttBridgeClientId: `vigil-test-${Date.now()}`,
  });
  ingest = createIngestService(h);
  bridge = await startMqttBridge({ ...h, ingest });
  key = await h.createApiKey('acme');
  device = await mqtt.connectAsync(brokerUrl, { reconnectPeriod: 0 });
});

afterAll(async () => {
  await device?.endAsync(true);
  await bridge?.close();
  await ingest?.close();
  await h?.close();
  await mosquitto?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('MQTT bridge to an external broker', () => {
  it('subscribes through $share with several connections', () => {
    expect(bridge.clientIds).toHaveLength(3);
  });

  it('queues each message published on the external broker exactly once, across the shared group', async () => {
    const n = 60;
    await Promise.all(
      Array.from({ length: n }, (_, i) =>
        device.publishAsync(`gateway/submit/${key}`, JSON.stringify({ deviceName: 'b', i }), { qos: 1 }),
      ),
    );
    await device.publishAsync(`raw/${key}/dev 3`, Buffer.from([0xca, 0xfe]), { qos: 1 });
    await eventually(async () => (await h.queuedItems()).length >= n + 1, {
      message: 'every message queued',
    });
    // A duplicate would come through another connection of the group, in no order with the rest:
    // nothing marks the moment none can come any more, so the test gives it a short while.
    await sleep(200);
    const items = await h.queuedItems();
    const submitted = items.filter((i) => i.gateway === 'submit');
    expect(submitted).toHaveLength(n);
    expect(new Set(submitted.map((i) => i.body)).size).toBe(n);
    expect(submitted[0]).toMatchObject({
      env: 'acme',
      via: 'mqtt',
      client: expect.stringMatching(/^bridge:/) as unknown,
    });
    expect(items.find((i) => i.gateway === 'raw')).toMatchObject({
      deviceName: 'dev 3',
      body: 'cafe',
      bodyIsHex: true,
    });
  });

  it('acknowledges and logs a payload that can never be processed, and carries on', async () => {
    await device.publishAsync(`gateway/submit/${key}`, 'not json', { qos: 1 });
    await device.publishAsync(`gateway/submit/${key}`, '{"deviceName":"after"}', { qos: 1 });
    await eventually(async () => (await h.queuedItems()).some((i) => i.body === '{"deviceName":"after"}'), {
      message: 'the next payload queued',
    });
    await eventually(
      async () => (await ingest.ingestLog.list('acme', 5)).some((e) => e.code === 'INVALID_JSON'),
      {
        message: 'the refusal in the ingestion log',
      },
    );
  });
});

describe('MQTT bridge while Redis is down', () => {
  it('keeps the message unacknowledged and queues it once Redis is back', async () => {
    const redis = await startRedis({ dataDir: join(dir, 'redis') });
    onTestFinished(() => redis.stop());
    const h2 = createIngestHarness({
      redisUrl: redis.url,
      mqttBridgeUrl: brokerUrl,
      mqttBridgeGroup: 'outage',
      mqttBridgeConnections: 1,
      mqttBridgeClientId: `vigil-outage-${Date.now()}`,
      ingestWriteTimeoutMs: 300,
      credentialCacheMs: 60_000,
    });
    const warnings: string[] = [];
    const log = pino({ level: 'warn' }, { write: (line: string) => warnings.push(line) });
    const bridge2 = await startMqttBridge({ ...h2, log });
    onTestFinished(async () => {
      await bridge2.close();
      await h2.close();
    });
    const key2 = await h2.createApiKey('acme');
    await device.publishAsync(`gateway/submit/${key2}`, '{"deviceName":"warm"}', { qos: 1 });
    await eventually(async () => (await h2.queuedItems()).length === 1, {
      message: 'the first message queued',
    });

    await redis.kill();
    await device.publishAsync(`gateway/submit/${key2}`, '{"deviceName":"during"}', { qos: 1 });
    await eventually(() => warnings.some((w) => w.includes('bridge cannot queue yet')), {
      message: 'the bridge failing to queue the message',
    });
    await redis.restart();
    await eventually(async () => (await h2.queuedItems()).some((i) => i.body === '{"deviceName":"during"}'), {
      message: 'the message queued after the outage',
    });
    const during = (await h2.queuedItems()).filter((i) => i.body === '{"deviceName":"during"}');
    expect(during).toHaveLength(1);
  });
});
