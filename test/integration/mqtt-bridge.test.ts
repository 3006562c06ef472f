import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import mqtt, { type MqttClient } from 'mqtt';
import { freePort, isListening, startRedis } from '../../scripts/lib/local-services.ts';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { startMqttBridge, type RunningBridge } from '../../src/mqtt/bridge.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

let dir: string;
let mosquitto: ChildProcess;
let brokerUrl: string;
let h: IngestHarness;
let ingest: IngestService;
let bridge: RunningBridge;
let device: MqttClient;
let key: string;

/** Starts Debian's mosquitto 2.0 (which has shared subscriptions) on a free loopback port. */
async function startMosquitto(): Promise<{ url: string; process: ChildProcess }> {
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [`listener ${port} 127.0.0.1`, 'allow_anonymous true', 'persistence false', ''].join('\n'),
  );
  const child = spawn('/usr/sbin/mosquitto', ['-c', conf], { stdio: 'ignore' });
  const deadline = Date.now() + 10_000;
  while (!(await isListening(port))) {
    if (Date.now() > deadline || child.exitCode !== null) throw new Error('mosquitto did not start');
    await new Promise((r) => setTimeout(r, 50));
  }
  return { url: `mqtt://127.0.0.1:${port}`, process: child };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vigil-bridge-'));
  const m = await startMosquitto();
  mosquitto = m.process;
  brokerUrl = m.url;
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
  mosquitto?.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

const waitFor = async (check: () => Promise<boolean>, timeoutMs = 5000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
};

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
    await waitFor(async () => (await h.queuedItems()).length >= n + 1);
    await new Promise((r) => setTimeout(r, 200));
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
    await waitFor(async () => (await h.queuedItems()).some((i) => i.body === '{"deviceName":"after"}'));
    await waitFor(async () =>
      (await ingest.ingestLog.list('acme', 5)).some((e) => e.code === 'INVALID_JSON'),
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
    const bridge2 = await startMqttBridge(h2);
    onTestFinished(async () => {
      await bridge2.close();
      await h2.close();
    });
    const key2 = await h2.createApiKey('acme');
    await device.publishAsync(`gateway/submit/${key2}`, '{"deviceName":"warm"}', { qos: 1 });
    await waitFor(async () => (await h2.queuedItems()).length === 1);

    await redis.kill();
    await device.publishAsync(`gateway/submit/${key2}`, '{"deviceName":"during"}', { qos: 1 });
    await new Promise((r) => setTimeout(r, 800));
    await redis.restart();
    await waitFor(
      async () => (await h2.queuedItems()).some((i) => i.body === '{"deviceName":"during"}'),
      15_000,
    );
    const during = (await h2.queuedItems()).filter((i) => i.body === '{"deviceName":"during"}');
    expect(during).toHaveLength(1);
  });
});
