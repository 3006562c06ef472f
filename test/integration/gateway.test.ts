import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../src/gateway/start-gateway.ts';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { ingestIdTimeMs } from '../../src/ingest/ingest-id.ts';
import { eventually } from '../support/eventually.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

let h: IngestHarness;
let ingest: IngestService;
let gateway: RunningGateway;
let base: string;
let key: string;
let preparserKey: string;

beforeAll(async () => {
  h = createIngestHarness({ bodyLimitBytes: 1024, credentialCacheMs: 100 });
  ingest = createIngestService(h);
  gateway = await startGateway({ ...h, ingest });
  base = `http://127.0.0.1:${gateway.port}`;
  key = await h.createApiKey('acme');
  preparserKey = await h.createApiKey('withpp');
  await h.setPreparser('withpp', 'enabled');
});

afterAll(async () => {
  await gateway?.close();
  await ingest?.close();
  await h?.close();
});

const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, {
    method: 'POST',
    body,
    headers: { 'content-type': 'application/json', ...headers },
  });

async function expectError(res: Response, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(await res.json()).toEqual({
    status: 'error',
    error: { code, message: expect.any(String) as unknown },
  });
}

/** Status of a POST whose path is sent exactly as written (fetch would normalise `..`). */
function rawRequestStatus(path: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port: gateway.port, path, method: 'POST' }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', reject);
    req.end('x');
  });
}

async function queuedById(id: string) {
  const items = await h.queuedItems();
  return items.find((i) => i.id === id);
}

describe('HTTP gateway: /gateway/submit', () => {
  it('answers 202 with an ingest id and queues the body with env, gateway, client and receive time', async () => {
    const before = Date.now();
    const body = JSON.stringify({ deviceName: 'd1', Temperature: 21.5 });
    const res = await post(`/gateway/submit/${key}`, body);
    expect(res.status).toBe(202);
    const json = (await res.json()) as { status: string; data: { id: string } };
    expect(json.status).toBe('success');
    expect(ingestIdTimeMs(json.data.id)).toBeGreaterThanOrEqual(before);
    const item = await queuedById(json.data.id);
    expect(item).toMatchObject({
      env: 'acme',
      gateway: 'submit',
      via: 'http',
      body,
      bodyIsHex: false,
      client: expect.stringContaining('127.0.0.1') as unknown,
    });
    expect(item?.receivedMs).toBeGreaterThanOrEqual(before);
    expect(item?.receivedMs).toBeLessThanOrEqual(Date.now());
    expect(item?.deviceName).toBeUndefined();
  });

  it('reads the body as JSON whatever the Content-Type (curl -d sends a form type)', async () => {
    const res = await post(`/gateway/submit/${key}`, '{"deviceName":"d1","x":1}', {
      'content-type': 'application/x-www-form-urlencoded',
    });
    expect(res.status).toBe(202);
  });

  it('refuses invalid JSON, an empty body and non-UTF-8 bytes with 400 INVALID_JSON', async () => {
    await expectError(await post(`/gateway/submit/${key}`, '{"deviceName":'), 400, 'INVALID_JSON');
    await expectError(await post(`/gateway/submit/${key}`, ''), 400, 'INVALID_JSON');
    await expectError(
      await post(`/gateway/submit/${key}`, Buffer.from([0xff, 0xfe, 0x00])),
      400,
      'INVALID_JSON',
    );
  });

  it('refuses a body without deviceName when no pre-parser is enabled, and accepts it when one is', async () => {
    await expectError(await post(`/gateway/submit/${key}`, '{"Temperature":1}'), 400, 'MISSING_DEVICE_NAME');
    await expectError(await post(`/gateway/submit/${key}`, '[1,2]'), 400, 'MISSING_DEVICE_NAME');
    expect((await post(`/gateway/submit/${preparserKey}`, '[1,2]')).status).toBe(202);
  });

  it('records a refused payload in the environment’s ingestion log', async () => {
    await post(`/gateway/submit/${key}`, 'not json');
    await eventually(
      async () =>
        (await ingest.ingestLog.list('acme', 10)).some(
          (e) => e.code === 'INVALID_JSON' && e.outcome === 'rejected' && e.gateway === 'submit',
        ),
      { timeoutMs: 5000, message: 'the refusal in the ingestion log' },
    );
  });
});

describe('HTTP gateway: raw and pre-parser paths', () => {
  it('queues raw text with ?deviceName= and non-UTF-8 bytes as lowercase hex', async () => {
    const text = await post(`/raw/${key}?deviceName=dev%201`, 'hello', { 'content-type': 'text/plain' });
    expect(text.status).toBe(202);
    const textItem = await queuedById(((await text.json()) as { data: { id: string } }).data.id);
    expect(textItem).toMatchObject({ gateway: 'raw', body: 'hello', bodyIsHex: false, deviceName: 'dev 1' });

    const bytes = await post(`/raw/${key}?deviceName=d2`, Buffer.from([0xde, 0xad, 0xbe, 0xef]), {
      'content-type': 'application/octet-stream',
    });
    expect(bytes.status).toBe(202);
    const bytesItem = await queuedById(((await bytes.json()) as { data: { id: string } }).data.id);
    expect(bytesItem).toMatchObject({ body: 'deadbeef', bodyIsHex: true, deviceName: 'd2' });
  });

  it('accepts an empty raw body (a heartbeat) and refuses /raw without a device name unless a pre-parser is enabled', async () => {
    expect((await post(`/raw/${key}?deviceName=d1`, '')).status).toBe(202);
    await expectError(await post(`/raw/${key}`, 'abc'), 400, 'MISSING_DEVICE_NAME');
    await expectError(
      await post(`/raw/${key}?deviceName=${'x'.repeat(129)}`, 'abc'),
      400,
      'MISSING_DEVICE_NAME',
    );
    expect((await post(`/raw/${preparserKey}`, 'abc')).status).toBe(202);
  });

  it('answers 409 NO_PREPARSER on every pre-parser path when the environment has none', async () => {
    for (const path of ['preparserfirst', 'rawpreparserfirst', 'preparseronly', 'rawpreparseronly']) {
      await expectError(await post(`/${path}/${key}`, '{}'), 409, 'NO_PREPARSER');
    }
  });

  it('uses a disabled pre-parser on the pre-parser paths but not on /gateway/submit', async () => {
    const k = await h.createApiKey('disabledpp');
    await h.setPreparser('disabledpp', 'disabled');
    expect((await post(`/preparserfirst/${k}`, '{"any":"thing"}')).status).toBe(202);
    expect((await post(`/rawpreparseronly/${k}`, Buffer.from([0x01, 0xff]))).status).toBe(202);
    await expectError(await post(`/gateway/submit/${k}`, '{"any":"thing"}'), 400, 'MISSING_DEVICE_NAME');
  });

  it('requires JSON on the JSON pre-parser paths and accepts arrays there', async () => {
    await expectError(await post(`/preparseronly/${preparserKey}`, 'x'), 400, 'INVALID_JSON');
    const res = await post(`/preparseronly/${preparserKey}`, '[{"a":1}]');
    expect(res.status).toBe(202);
    const item = await queuedById(((await res.json()) as { data: { id: string } }).data.id);
    expect(item).toMatchObject({ env: 'withpp', gateway: 'preparseronly', body: '[{"a":1}]' });
  });
});

describe('HTTP gateway: refusals', () => {
  it('answers 413 PAYLOAD_TOO_LARGE above the body limit and logs it', async () => {
    await expectError(
      await post(`/raw/${key}?deviceName=d`, Buffer.alloc(1025, 0x61)),
      413,
      'PAYLOAD_TOO_LARGE',
    );
    expect((await post(`/raw/${key}?deviceName=d`, Buffer.alloc(1024, 0x61))).status).toBe(202);
    await eventually(
      async () =>
        (await ingest.ingestLog.list('acme', 20)).some(
          (e) => e.code === 'PAYLOAD_TOO_LARGE' && e.deviceName === 'd',
        ),
      { timeoutMs: 5000, message: 'the refusal in the ingestion log' },
    );
  });

  it('answers 401 INVALID_API_KEY for unknown, malformed and absurdly long keys', async () => {
    await expectError(await post(`/gateway/submit/vk_unknown`, '{"deviceName":"d"}'), 401, 'INVALID_API_KEY');
    await expectError(await post(`/gateway/submit/nokey`, '{"deviceName":"d"}'), 401, 'INVALID_API_KEY');
    await expectError(await post(`/raw/vk_${'a'.repeat(500)}`, 'x'), 401, 'INVALID_API_KEY');
    await expectError(await post(`/raw/%2F..%2Fetc`, 'x'), 401, 'INVALID_API_KEY');
  });

  it('refuses a revoked key within the credential cache time', async () => {
    const k = await h.createApiKey('acme');
    expect((await post(`/raw/${k}?deviceName=d`, 'x')).status).toBe(202);
    await h.revokeApiKey(k);
    await eventually(async () => (await ingest.lookupKey(k)) === null, {
      timeoutMs: h.config.credentialCacheMs + 5000,
      message: 'the revocation past the key cache',
    });
    await expectError(await post(`/raw/${k}?deviceName=d`, 'x'), 401, 'INVALID_API_KEY');
  });

  it('answers 405 with Allow on other methods of a gateway path and 404 elsewhere', async () => {
    const get = await fetch(`${base}/gateway/submit/${key}`);
    expect(get.headers.get('allow')).toBe('POST');
    await expectError(get, 405, 'METHOD_NOT_ALLOWED');
    await expectError(
      await fetch(`${base}/raw/${key}`, { method: 'PUT', body: 'x' }),
      405,
      'METHOD_NOT_ALLOWED',
    );
    await expectError(await post(`/nope/${key}`, '{}'), 404, 'NOT_FOUND');
    await expectError(await post(`/gateway/submit`, '{}'), 404, 'NOT_FOUND');
    await expectError(await post(`/gateway/submit/${key}/extra`, '{}'), 404, 'NOT_FOUND');
    await expectError(await post(`/raw/%E0%A4%A`, 'x'), 400, 'BAD_REQUEST');
    expect(await rawRequestStatus(`/gateway/submit/../../raw/${key}`)).toBe(404);
    expect(await rawRequestStatus(`/raw/..`)).toBe(401);
  });

  it('counts accepted and refused payloads in the metrics', async () => {
    const text = await h.metrics.metrics();
    expect(text).toMatch(/vigil_ingest_accepted_total\{via="http",gateway="submit"\} \d+/);
    expect(text).toMatch(
      /vigil_ingest_rejected_total\{via="http",gateway="submit",code="INVALID_JSON"\} \d+/,
    );
    expect(text).toContain('vigil_ingest_batch_size_bucket');
  });
});
