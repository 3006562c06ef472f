/**
 * The bridge over MQTT 5 on a real Mosquitto: devices publishing Vigil's topics with MQTT 5, and
 * ChirpStack v4's MQTT integration events (JSON encoding) of the applications
 * VIGIL_MQTT_BRIDGE_CHIRPSTACK maps to an API key.
 *
 * The bridges here have one connection each. mqtt.js handles a connection's messages one at a
 * time, the next only once the last one's PUBACK is sent, and the broker delivers in order: a
 * message queued after another shows that the other was acknowledged.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import mqtt, { type IPublishPacket, type MqttClient } from 'mqtt';
import { startRedis } from '../../scripts/lib/local-services.ts';
import type { ChirpstackApplications } from '../../src/config/chirpstack-applications.ts';
import type { IngestItem } from '../../src/domain/ingest-item.ts';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { startMqttBridge, type RunningBridge } from '../../src/mqtt/bridge.ts';
import { joinEvent, statusEvent, upEvent } from '../support/chirpstack-events.ts';
import { eventually } from '../support/eventually.ts';
import { captureLog, type LogLines } from '../support/log-lines.ts';
import { startMosquitto, type Mosquitto } from '../support/mosquitto.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

/** ChirpStack v4 application ids (UUIDs): one mapped, one not. */
const APP = '17c82e96-be03-4f38-aef3-f83d48582d97';
const UNMAPPED_APP = '5a1d0f3e-8c1b-4a57-9d0e-2f6b7c8d9e01';
/** MQTT 5 reason code of a PUBACK: the broker has no subscriber for the topic. */
const NO_MATCHING_SUBSCRIBERS = 0x10;

let dir: string;
let mosquitto: Mosquitto;
let h: IngestHarness;
let ingest: IngestService;
let bridge: RunningBridge;
let device: MqttClient;
let key: string;
let logged: LogLines;
/** The reason code of each PUBACK the broker sent `device`, by message id. */
const pubacks = new Map<number, number>();

/** ChirpStack's topic of an event. */
const eventTopic = (applicationId: string, devEui: string, event: string): string =>
  `application/${applicationId}/device/${devEui}/event/${event}`;

/** Publishes `payload` with QoS 1 from the device; the packet sent, with its message id. */
async function publish(topic: string, payload: string | Buffer): Promise<IPublishPacket> {
  return (await device.publishAsync(topic, payload, { qos: 1 })) as IPublishPacket;
}

/** Publishes a ChirpStack event on its topic (application and DevEUI from its `deviceInfo`). */
const publishEvent = (
  event: string,
  body: { deviceInfo: { applicationId: string; devEui: string } },
): Promise<IPublishPacket> =>
  publish(eventTopic(body.deviceInfo.applicationId, body.deviceInfo.devEui, event), JSON.stringify(body));

/** The queued ChirpStack items of device `deviceName`. */
async function chirpstackItems(harness: IngestHarness, deviceName: string): Promise<IngestItem[]> {
  return (await harness.queuedItems()).filter(
    (i) => i.gateway === 'chirpstack' && i.body.includes(`"deviceName":"${deviceName}"`),
  );
}

/** Waits until `count` ChirpStack items of device `deviceName` are queued; those items. */
const queuedFor = (harness: IngestHarness, deviceName: string, count = 1): Promise<IngestItem[]> =>
  eventually(() => chirpstackItems(harness, deviceName), {
    until: (found) => found.length >= count,
    message: `${count} queued item(s) of ${deviceName}`,
  });

const mapped = (entries: [string, string][]): ChirpstackApplications => new Map(entries);

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vigil-bridge5-'));
  mosquitto = await startMosquitto(dir);
  h = createIngestHarness({
    mqttBridgeUrl: mosquitto.url,
    mqttBridgeShared: true,
    mqttBridgeConnections: 1,
    mqttBridgeClientId: `vigil-cs-${Date.now()}`,
  });
  key = await h.createApiKey('acme');
  ingest = createIngestService(h);
  logged = captureLog('info');
  bridge = await startMqttBridge({
    ...h,
    log: logged.log,
    config: { ...h.config, mqttBridgeChirpstack: mapped([[APP, key]]) },
    ingest,
  });
  device = await mqtt.connectAsync(mosquitto.url, { protocolVersion: 5, reconnectPeriod: 0 });
  device.on('packetreceive', (packet) => {
    if (packet.cmd === 'puback') pubacks.set(packet.messageId ?? -1, packet.reasonCode ?? 0);
  });
});

afterAll(async () => {
  await device?.endAsync(true);
  await bridge?.close();
  await ingest?.close();
  await h?.close();
  await mosquitto?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('MQTT bridge over MQTT 5', () => {
  it('queues what an MQTT 5 device publishes on gateway/submit/<KEY>', async () => {
    await device.publishAsync(`gateway/submit/${key}`, '{"deviceName":"v5","t":21.5}', { qos: 1 });
    const item = await eventually(async () =>
      (await h.queuedItems()).find((i) => i.body === '{"deviceName":"v5","t":21.5}'),
    );
    expect(item).toMatchObject({ gateway: 'submit', env: 'acme', via: 'mqtt' });
  });
});

describe('MQTT bridge taking ChirpStack integration events', () => {
  it('queues up and status events as chirpstack items with their event type', async () => {
    const up = upEvent(APP, 'meter-1', '0101010101010101', 42, [0x01, 0x0c, 0x2a]);
    const status = statusEvent(APP, 'meter-1', '0101010101010101');
    await publishEvent('up', up);
    await publishEvent('status', status);
    const items = await queuedFor(h, 'meter-1', 2);
    expect(items.map((i) => [i.event, JSON.parse(i.body) as unknown])).toEqual([
      ['up', up],
      ['status', status],
    ]);
    expect(items[0]).toMatchObject({ gateway: 'chirpstack', env: 'acme', via: 'mqtt', bodyIsHex: false });
    expect(items[0]?.client).toMatch(/^bridge:/);
  });

  it('acknowledges a join event and logs it as ignored, queueing nothing', async () => {
    await publishEvent('join', joinEvent(APP, 'meter-2', '0202020202020202'));
    await publishEvent('up', upEvent(APP, 'meter-2', '0202020202020202', 0, [1]));
    // Queued only once the join before it was acknowledged (see the top of the file).
    const items = await queuedFor(h, 'meter-2');
    expect(items.map((i) => i.event)).toEqual(['up']);
    const entries = await eventually(
      async () => (await ingest.ingestLog.list('acme', 50)).filter((e) => e.outcome === 'ignored'),
      { until: (found) => found.length > 0, message: 'the join in the ingestion log' },
    );
    expect(entries).toEqual([
      expect.objectContaining({ gateway: 'chirpstack', deviceName: 'meter-2', code: null }),
    ]);
  });

  it('does not subscribe to an application that is not mapped', async () => {
    const body = upEvent(UNMAPPED_APP, 'stray-1', '0303030303030303', 1, [1]);
    const sent = await publishEvent('up', body);
    expect(pubacks.get(sent.messageId ?? -1)).toBe(NO_MATCHING_SUBSCRIBERS);
    expect(await chirpstackItems(h, 'stray-1')).toEqual([]);
  });

  it('acknowledges and logs events that are not ChirpStack JSON, and carries on', async () => {
    const withoutDevice: Record<string, unknown> = upEvent(APP, 'meter-3', '0404040404040404', 1, [1]);
    delete withoutDevice.deviceInfo;
    await publish(eventTopic(APP, '0404040404040404', 'up'), JSON.stringify(withoutDevice));
    // The protobuf encoding (chirpstack.toml `json=false`): binary, not JSON.
    await publish(eventTopic(APP, '0404040404040404', 'up'), Buffer.from([0x0a, 0x24, 0xff, 0x00, 0x12]));
    await publishEvent('up', upEvent(APP, 'meter-3', '0404040404040404', 2, [2]));
    await queuedFor(h, 'meter-3');
    const codes = await eventually(
      async () =>
        (await ingest.ingestLog.list('acme', 50)).filter((e) => e.outcome === 'rejected').map((e) => e.code),
      { until: (found) => found.length === 2, message: 'both refusals in the ingestion log' },
    );
    expect(codes.sort()).toEqual(['INVALID_JSON', 'INVALID_NETWORK_MESSAGE']);
  });

  it('never logs the API keys of its applications', () => {
    expect(logged.lines.length).toBeGreaterThan(0);
    expect(JSON.stringify(logged.lines)).not.toContain(key);
  });
});

describe('MQTT bridge whose session outlives its application map', () => {
  it('acknowledges and drops, with a warning, the events of an application no longer mapped', async () => {
    const retired = '6b2e1f4d-9c2a-4b68-8e1f-3a7c8d9e0f12';
    const current = '7c3f2a5e-0d3b-4c79-9f2a-4b8d9e0f1a23';
    const base = {
      ...h,
      ingest,
      config: { ...h.config, mqttBridgeShared: false, mqttBridgeClientId: `vigil-retired-${Date.now()}` },
    };
    const before = await startMqttBridge({
      ...base,
      config: { ...base.config, mqttBridgeChirpstack: mapped([[retired, key]]) },
    });
    await before.close();
    // The same client id: the broker resumes the session, and with it the subscription to `retired`.
    const { log, lines } = captureLog('warn');
    const after = await startMqttBridge({
      ...base,
      log,
      config: { ...base.config, mqttBridgeChirpstack: mapped([[current, key]]) },
    });
    onTestFinished(() => after.close());
    const stale = await publishEvent('up', upEvent(retired, 'old-1', '0505050505050505', 1, [1]));
    expect(pubacks.get(stale.messageId ?? -1)).toBe(0);
    await publishEvent('up', upEvent(current, 'new-1', '0606060606060606', 1, [1]));
    // Queued only once the stale event before it was acknowledged.
    await queuedFor(h, 'new-1');
    expect(lines).toContainEqual(expect.objectContaining({ level: 40, applicationId: retired }));
    expect(await chirpstackItems(h, 'old-1')).toEqual([]);
  });
});

describe('MQTT bridge taking ChirpStack events while Redis is down', () => {
  it('leaves the event unacknowledged, and the broker gives it to the next bridge of the same session', async () => {
    const app = '8d4a3b6f-1e4c-4d8a-8a3b-5c9e0f1a2b34';
    const redis = await startRedis({ dataDir: join(dir, 'redis') });
    onTestFinished(() => redis.stop());
    const h2 = createIngestHarness({
      redisUrl: redis.url,
      mqttBridgeUrl: mosquitto.url,
      mqttBridgeGroup: 'outage',
      mqttBridgeConnections: 1,
      mqttBridgeClientId: `vigil-cs-outage-${Date.now()}`,
      ingestWriteTimeoutMs: 300,
      credentialCacheMs: 60_000,
    });
    onTestFinished(() => h2.close());
    const key2 = await h2.createApiKey('acme');
    const { log, lines } = captureLog('warn');
    const ingest2 = createIngestService({ ...h2, log });
    onTestFinished(() => ingest2.close());
    const deps = {
      ...h2,
      log,
      ingest: ingest2,
      config: { ...h2.config, mqttBridgeChirpstack: mapped([[app, key2]]) },
    };
    const first = await startMqttBridge(deps);
    onTestFinished(() => first.close());
    await publishEvent('up', upEvent(app, 'warm', '0707070707070707', 1, [1]));
    await queuedFor(h2, 'warm');

    await redis.kill();
    await publishEvent('up', upEvent(app, 'during', '0707070707070707', 2, [2]));
    await eventually(() => lines.some((l) => l.code === 'UNAVAILABLE' && 'retryInMs' in l), {
      message: 'the bridge retrying the event',
    });
    // Stopped with the event unacknowledged: the broker keeps it in the session (MQTT 5 keeps a
    // session after its connection only for its session expiry interval).
    await first.close();
    await redis.restart();
    const second = await startMqttBridge(deps);
    onTestFinished(() => second.close());
    const during = await queuedFor(h2, 'during');
    expect(during).toHaveLength(1);
    expect(during[0]?.event).toBe('up');
  });
});
