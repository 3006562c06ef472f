import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import mqtt from 'mqtt';
import { startGateway, type RunningGateway } from '../../src/gateway/start-gateway.ts';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { startMqttBroker, type RunningMqttBroker } from '../../src/mqtt/broker.ts';
import { GATEWAY_KINDS, GATEWAY_PATHS, isJsonGateway } from '../../src/domain/ingest-item.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

let h: IngestHarness;
let ingest: IngestService;
let gateway: RunningGateway;
let broker: RunningMqttBroker;
let key: string;

beforeAll(async () => {
  h = createIngestHarness({ bodyLimitBytes: 2048 });
  ingest = createIngestService(h);
  gateway = await startGateway({ ...h, ingest });
  broker = await startMqttBroker({ ...h, ingest });
  // An enabled pre-parser, so that every path accepts a body without a device name.
  key = await h.createApiKey('every-path');
  await h.setPreparser('every-path', 'enabled');
});

afterAll(async () => {
  await broker?.close();
  await gateway?.close();
  await ingest?.close();
  await h?.close();
});

const post = (path: string, body: string | Buffer, contentType = 'application/json') =>
  fetch(`http://127.0.0.1:${gateway.port}/${path}`, {
    method: 'POST',
    body,
    headers: { 'content-type': contentType },
  });

const code = async (res: Response) => ((await res.json()) as { error?: { code: string } }).error?.code;

describe.each(GATEWAY_KINDS.map((kind) => [kind]))('POST /%s/<KEY>', (kind) => {
  const path = `${GATEWAY_PATHS[kind]}/`;
  const json = isJsonGateway(kind);

  it('accepts a JSON object, also sent with a form Content-Type, and queues it', async () => {
    const body = JSON.stringify({ deviceName: `d-${kind}`, value: 1 });
    const res = await post(path + key, body, 'application/x-www-form-urlencoded');
    expect(res.status).toBe(202);
    const { data } = (await res.json()) as { data: { id: string } };
    const item = (await h.queuedItems()).find((i) => i.id === data.id);
    expect(item).toMatchObject({ env: 'every-path', gateway: kind, via: 'http', body, bodyIsHex: false });
  });

  it(`${json ? 'refuses' : 'accepts'} text that is not JSON`, async () => {
    const res = await post(path + key, 'temperature=21', 'text/plain');
    if (json) expect([res.status, await code(res)]).toEqual([400, 'INVALID_JSON']);
    else expect(res.status).toBe(202);
  });

  it(`${json ? 'refuses' : 'hex-encodes'} bytes that are not UTF-8`, async () => {
    const res = await post(path + key, Buffer.from([0x80, 0x81, 0xff]), 'application/octet-stream');
    if (json) {
      expect([res.status, await code(res)]).toEqual([400, 'INVALID_JSON']);
      return;
    }
    expect(res.status).toBe(202);
    const { data } = (await res.json()) as { data: { id: string } };
    expect((await h.queuedItems()).find((i) => i.id === data.id)).toMatchObject({
      body: '8081ff',
      bodyIsHex: true,
    });
  });

  it(`${json ? 'refuses' : 'accepts'} an empty body`, async () => {
    const res = await post(path + key, '');
    if (json) expect([res.status, await code(res)]).toEqual([400, 'INVALID_JSON']);
    else expect(res.status).toBe(202);
  });

  it('refuses an oversize body, an unknown key and other methods', async () => {
    const big = await post(path + key, JSON.stringify({ deviceName: 'd', pad: 'x'.repeat(3000) }));
    expect([big.status, await code(big)]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const unknown = await post(`${path}vk_not-a-real-key`, '{"deviceName":"d"}');
    expect([unknown.status, await code(unknown)]).toEqual([401, 'INVALID_API_KEY']);
    const get = await fetch(`http://127.0.0.1:${gateway.port}/${path}${key}`);
    expect([get.status, get.headers.get('allow'), await code(get)]).toEqual([
      405,
      'POST',
      'METHOD_NOT_ALLOWED',
    ]);
  });

  it('accepts the same payload over MQTT on the mirrored topic', async () => {
    const client = await mqtt.connectAsync(`mqtt://127.0.0.1:${broker.port}`, {
      reconnectPeriod: 0,
      username: 'device',
      password: key,
    });
    try {
      const body = JSON.stringify({ deviceName: `m-${kind}` });
      await client.publishAsync(`${path}${key}`, body, { qos: 1 });
      expect((await h.queuedItems()).find((i) => i.body === body)).toMatchObject({
        gateway: kind,
        via: 'mqtt',
      });
    } finally {
      await client.endAsync();
    }
  });
});
