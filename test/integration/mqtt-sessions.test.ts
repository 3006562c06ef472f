/**
 * Who may connect to the embedded broker, and whose persistent session a client id opens: every
 * connection authenticates with an API key, and a client id's session belongs to the environment
 * of the key that made it.
 */
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from 'vitest';
import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { startMqttBroker, type RunningMqttBroker } from '../../src/mqtt/broker.ts';
import { eventually } from '../support/eventually.ts';
import { SUBACK_FAILURE } from '../support/mqtt-codes.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

let h: IngestHarness;
let ingest: IngestService;
let broker: RunningMqttBroker;
let url: string;
let demoKey: string;
let evilKey: string;

beforeAll(async () => {
  h = createIngestHarness();
  ingest = createIngestService(h);
  broker = await startMqttBroker({ ...h, ingest });
  url = `mqtt://127.0.0.1:${broker.port}`;
  demoKey = await h.createApiKey('demo');
  evilKey = await h.createApiKey('evil');
});

afterAll(async () => {
  await broker?.close();
  await ingest?.close();
  await h?.close();
});

async function connect(opts: IClientOptions): Promise<MqttClient> {
  const client = await mqtt.connectAsync(url, { reconnectPeriod: 0, ...opts });
  onTestFinished(() => client.endAsync(true));
  return client;
}

/** The CONNACK return code of a refused connection, or `connected` with its sessionPresent flag. */
async function connackOf(opts: IClientOptions): Promise<number | { sessionPresent: boolean }> {
  const client = mqtt.connect(url, { reconnectPeriod: 0, ...opts });
  onTestFinished(() => client.endAsync(true));
  return new Promise((resolve, reject) => {
    client.on('packetreceive', (packet) => {
      if (packet.cmd !== 'connack') return;
      // An MQTT 5 client reads a 3.1.1 CONNACK's return code as its reason code.
      const code = packet.returnCode ?? packet.reasonCode ?? 0;
      if (code === 0) resolve({ sessionPresent: packet.sessionPresent });
      else resolve(code);
    });
    client.once('error', (err) => reject(err));
    client.once('close', () => reject(new Error('closed without a CONNACK')));
  });
}

/** Collects the payloads a client receives (as text) until the test ends. */
function collect(client: MqttClient): string[] {
  const received: string[] = [];
  client.on('message', (_topic, payload) => received.push(payload.toString()));
  return received;
}

/** A demo subscriber with a persistent session on `raw/<demo key>/#`, then offline. */
async function parkDemoSession(clientId: string): Promise<void> {
  const archiver = await connect({ clientId, clean: false, username: 'archiver', password: demoKey });
  await archiver.subscribeAsync(`raw/${demoKey}/#`, { qos: 1 });
  await archiver.endAsync();
}

async function publishAsDemoDevice(...payloads: string[]): Promise<void> {
  const device = await connect({ username: 'device', password: demoKey });
  for (const p of payloads) await device.publishAsync(`raw/${demoKey}/d1`, p, { qos: 1 });
  await device.endAsync();
}

describe('MQTT connections and sessions', () => {
  it('refuses a CONNECT without a password (5, not authorized) or with one that is not a key (4)', async () => {
    expect(await connackOf({})).toBe(5);
    expect(await connackOf({ username: 'device' })).toBe(5);
    expect(await connackOf({ username: 'device', password: '' })).toBe(5);
    expect(await connackOf({ username: 'device', password: 'vk_not-a-key' })).toBe(4);
    expect(await connackOf({ protocolVersion: 3 })).toBe(5);
    // MQTT 5 is refused before any key is looked at (aedes 1.x speaks 3.1 and 3.1.1).
    expect(await connackOf({ protocolVersion: 5, username: 'device', password: demoKey })).toBe(1);
  });

  it('keeps a persistent session from a client without credentials and gives it back to its environment', async () => {
    const clientId = 'demo-archiver-1';
    await parkDemoSession(clientId);
    await publishAsDemoDevice('queued-1', 'queued-2');

    expect(await connackOf({ clientId, clean: false })).toBe(5);

    const archiver = await connect({ clientId, clean: false, username: 'archiver', password: demoKey });
    const received = collect(archiver);
    await eventually(() => received.length >= 2, { message: 'the queued payloads' });
    expect(received).toEqual(['queued-1', 'queued-2']);
  });

  it('gives another environment’s client with the same id a session of its own, with nothing of the first', async () => {
    const clientId = 'demo-archiver-2';
    await parkDemoSession(clientId);
    await publishAsDemoDevice('kept-1', 'kept-2');

    const evil = await connect({ clientId, clean: false, username: 'x', password: evilKey });
    const stolen = collect(evil);
    await expect(evil.subscribeAsync(`raw/${demoKey}/#`, { qos: 1 })).rejects.toMatchObject({
      packet: { granted: [SUBACK_FAILURE] },
    });
    await evil.endAsync();

    const archiver = await connect({ clientId, clean: false, username: 'archiver', password: demoKey });
    const received = collect(archiver);
    await eventually(() => received.length >= 2, { message: 'the queued payloads' });
    expect(received).toEqual(['kept-1', 'kept-2']);
    expect(stolen).toEqual([]);
  });

  it('reports no session present to another environment’s client that reuses the id', async () => {
    const clientId = 'demo-archiver-3';
    await parkDemoSession(clientId);
    await publishAsDemoDevice('private-1');
    expect(await connackOf({ clientId, clean: false, username: 'x', password: evilKey })).toEqual({
      sessionPresent: false,
    });
  });

  it('does not let another environment’s client with the same id kick a live subscriber off', async () => {
    const clientId = 'demo-archiver-4';
    const archiver = await connect({ clientId, clean: false, username: 'archiver', password: demoKey });
    await archiver.subscribeAsync(`raw/${demoKey}/#`, { qos: 1 });
    const received = collect(archiver);
    let closed = false;
    archiver.on('close', () => (closed = true));

    await connect({ clientId, clean: false, username: 'x', password: evilKey });
    // Published after the second CONNACK: a subscriber that was kicked off would not get it live.
    await publishAsDemoDevice('live-1');
    await eventually(() => received.length >= 1 || closed, { message: 'the live payload' });
    expect({ closed, received }).toEqual({ closed: false, received: ['live-1'] });
  });

  it('sends a restored session only the queued messages of subscriptions authorized again', async () => {
    const clientId = 'demo-archiver-5';
    const revoked = await h.createApiKey('demo');
    const archiver = await connect({ clientId, clean: false, username: 'archiver', password: demoKey });
    await archiver.subscribeAsync([`raw/${revoked}/#`, `raw/${demoKey}/#`], { qos: 1 });
    await archiver.endAsync();
    const device = await connect({ username: 'device', password: revoked });
    await device.publishAsync(`raw/${revoked}/d1`, 'of-a-revoked-key', { qos: 1 });
    await device.endAsync();
    await h.revokeApiKey(revoked);
    await publishAsDemoDevice('of-a-valid-key');
    await eventually(async () => (await ingest.lookupKey(revoked)) === null, { message: 'the revocation' });

    const back = await connect({ clientId, clean: false, username: 'archiver', password: demoKey });
    const received = collect(back);
    // Queued messages go out in order: the revoked key's would come first.
    await eventually(() => received.length >= 1, { message: 'the valid key’s payload' });
    expect(received).toEqual(['of-a-valid-key']);
  });

  it('closes the connection on a publish whose topic key belongs to another environment than its password', async () => {
    const client = await connect({ username: 'device', password: evilKey });
    const closed = new Promise<string>((resolve) => client.once('close', () => resolve('closed')));
    const acknowledged = client
      .publishAsync(`gateway/submit/${demoKey}`, '{"deviceName":"cross"}', { qos: 1 })
      .then(
        () => 'acknowledged',
        () => 'closed',
      );
    expect(await Promise.race([closed, acknowledged])).toBe('closed');
    expect((await h.queuedItems()).some((i) => i.body === '{"deviceName":"cross"}')).toBe(false);
  });

  it('accepts a publish with the key in the topic from a connection with a key of the same environment', async () => {
    const other = await h.createApiKey('demo');
    const client = await connect({ username: 'device', password: other });
    await client.publishAsync(`gateway/submit/${demoKey}`, '{"deviceName":"same-env"}', { qos: 1 });
    expect((await h.queuedItems()).find((i) => i.body === '{"deviceName":"same-env"}')).toMatchObject({
      env: 'demo',
      client: client.options.clientId,
    });
  });
});
