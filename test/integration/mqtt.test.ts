import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import mqtt, { type MqttClient } from 'mqtt';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { startMqttBroker, type RunningMqttBroker } from '../../src/mqtt/broker.ts';
import { eventually } from '../support/eventually.ts';
import { CONNACK_BAD_CREDENTIALS, SUBACK_FAILURE } from '../support/mqtt-codes.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

let h: IngestHarness;
let ingest: IngestService;
let broker: RunningMqttBroker;
let url: string;
let key: string;

beforeAll(async () => {
  h = createIngestHarness({ bodyLimitBytes: 1024 });
  ingest = createIngestService(h);
  broker = await startMqttBroker({ ...h, ingest });
  url = `mqtt://127.0.0.1:${broker.port}`;
  key = await h.createApiKey('acme');
});

afterAll(async () => {
  await broker?.close();
  await ingest?.close();
  await h?.close();
});

/** A connection with acme's key as its password unless `opts` say otherwise. */
async function connect(opts: mqtt.IClientOptions = {}): Promise<MqttClient> {
  const client = await mqtt.connectAsync(url, {
    reconnectPeriod: 0,
    username: 'device',
    password: key,
    ...opts,
  });
  onTestFinished(() => client.endAsync(true));
  return client;
}

describe('MQTT broker', () => {
  it('queues QoS 0 and QoS 1 publishes to gateway/submit/<KEY>', async () => {
    const client = await connect();
    await client.publishAsync(`gateway/submit/${key}`, '{"deviceName":"q1","v":1}', { qos: 1 });
    const afterAck = await h.queuedItems();
    expect(afterAck.find((i) => i.body === '{"deviceName":"q1","v":1}')).toMatchObject({
      env: 'acme',
      gateway: 'submit',
      via: 'mqtt',
      client: client.options.clientId,
      bodyIsHex: false,
    });
    await client.publishAsync(`gateway/submit/${key}`, '{"deviceName":"q0","v":0}', { qos: 0 });
    await eventually(
      async () => (await h.queuedItems()).some((i) => i.body === '{"deviceName":"q0","v":0}'),
      {
        message: 'the QoS 0 publish queued',
      },
    );
  });

  it('takes the device name from raw/<KEY>/<deviceName> and hex-encodes binary payloads', async () => {
    const client = await connect();
    await client.publishAsync(`raw/${key}/sensor 7`, Buffer.from([0x00, 0xff, 0x10]), { qos: 1 });
    const items = await h.queuedItems();
    expect(items.find((i) => i.deviceName === 'sensor 7')).toMatchObject({
      gateway: 'raw',
      body: '00ff10',
      bodyIsHex: true,
    });
  });

  it('accepts the API key as the password and key-less topics from such a client', async () => {
    const client = await connect({ username: 'device', password: key });
    await client.publishAsync('gateway/submit', '{"deviceName":"pw","v":2}', { qos: 1 });
    expect((await h.queuedItems()).find((i) => i.body === '{"deviceName":"pw","v":2}')?.env).toBe('acme');
  });

  it('stops accepting publishes of a password-authenticated client once its key is revoked', async () => {
    const revocable = await h.createApiKey('acme');
    const client = await connect({ username: 'device', password: revocable });
    await client.publishAsync('gateway/submit', '{"deviceName":"rv","n":1}', { qos: 1 });
    expect((await h.queuedItems()).some((i) => i.body === '{"deviceName":"rv","n":1}')).toBe(true);
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    await h.revokeApiKey(revocable);
    // Once the broker's key cache has let the key go, the key sweep or this publish closes the
    // connection, whichever comes first.
    await eventually(async () => (await ingest.lookupKey(revocable)) === null, { message: 'the revocation' });
    if (!client.disconnected) client.publish('gateway/submit', '{"deviceName":"rv","n":2}', { qos: 1 });
    await closed;
    expect((await h.queuedItems()).some((i) => i.body === '{"deviceName":"rv","n":2}')).toBe(false);
  });

  it('closes a subscriber’s connection once the key of its subscription is revoked', async () => {
    const revocable = await h.createApiKey('acme');
    const client = await connect();
    await client.subscribeAsync(`raw/${revocable}/+`, { qos: 1 });
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    await h.revokeApiKey(revocable);
    await closed;
  });

  it('refuses a connection whose password is not a valid key', async () => {
    await expect(
      mqtt.connectAsync(url, { reconnectPeriod: 0, username: 'x', password: 'vk_wrong' }),
    ).rejects.toMatchObject({ code: CONNACK_BAD_CREDENTIALS });
  });

  it('closes the connection on a publish with an unknown key and queues nothing', async () => {
    const client = await connect();
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.publish('gateway/submit/vk_unknownkey', '{"deviceName":"bad"}', { qos: 1 });
    await closed;
    expect((await h.queuedItems()).some((i) => i.body === '{"deviceName":"bad"}')).toBe(false);
  });

  it('acknowledges a payload that can never be processed and records it in the ingestion log', async () => {
    const client = await connect();
    await client.publishAsync(`gateway/submit/${key}`, 'not json', { qos: 1 });
    await client.publishAsync(`preparserfirst/${key}`, '{}', { qos: 1 });
    await client.publishAsync(`raw/${key}`, Buffer.alloc(2000, 0x61), { qos: 1 });
    expect((await h.queuedItems()).some((i) => i.body === 'not json')).toBe(false);
    const logged = await eventually(() => ingest.ingestLog.list('acme', 10), {
      until: (entries) => entries.length >= 3,
      message: 'three ingestion log entries',
    });
    const codes = logged.map((e) => e.code);
    expect(codes).toEqual(expect.arrayContaining(['INVALID_JSON', 'NO_PREPARSER', 'PAYLOAD_TOO_LARGE']));
    expect(client.connected).toBe(true);
  });

  it('lets a client subscribe only to the topics of a key it holds', async () => {
    const other = await h.createApiKey('other');
    const client = await connect({ username: 'device', password: key });
    const granted = await client.subscribeAsync(`raw/${key}/+`, { qos: 1 });
    expect(granted.map((g) => g.qos)).toEqual([1]);
    for (const foreign of [
      '#',
      'raw/+/x',
      `raw/${other}/+`,
      '$SYS/#',
      'gateway/#',
      `$share/g/raw/${key}/+`,
    ]) {
      await expect(client.subscribeAsync(foreign, { qos: 1 })).rejects.toMatchObject({
        packet: { granted: [SUBACK_FAILURE] },
      });
    }
    const received = new Promise<string>((resolve) => client.once('message', (topic) => resolve(topic)));
    const device = await connect();
    await device.publishAsync(`raw/${key}/d9`, 'hi', { qos: 1 });
    expect(await received).toBe(`raw/${key}/d9`);
  });

  it('closes the connection on a publish to a topic that is not a gateway topic', async () => {
    const client = await connect();
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.publish('some/other/topic', 'x', { qos: 1 });
    await closed;
  });

  it('closes the connection when a packet announces far more than the body limit, before buffering it', async () => {
    const client = await connect();
    const closed = new Promise<void>((resolve) => client.once('close', () => resolve()));
    client.publish(`raw/${key}/huge`, Buffer.alloc(200_000, 0x61), { qos: 1 });
    await closed;
    expect((await h.queuedItems()).some((i) => i.deviceName === 'huge')).toBe(false);
  });
});
