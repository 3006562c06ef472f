/**
 * What the gateway's bare node:http reading keeps from express/body-parser (encoded bodies, the
 * limit, targets, the query) and the bounded way it refuses an oversize body.
 */
import { request } from 'node:http';
import { connect } from 'node:net';
import { brotliCompressSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../src/gateway/start-gateway.ts';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { eventually } from '../support/eventually.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

const LIMIT_BYTES = 1024;

let h: IngestHarness;
let ingest: IngestService;
let gateway: RunningGateway;
let base: string;
let key: string;

beforeAll(async () => {
  h = createIngestHarness({ bodyLimitBytes: LIMIT_BYTES, httpHeadersTimeoutMs: 500, httpRequestTimeoutMs: 1500 });
  ingest = createIngestService(h);
  gateway = await startGateway({ ...h, ingest });
  base = `http://127.0.0.1:${gateway.port}`;
  key = await h.createApiKey('http');
});

afterAll(async () => {
  await gateway?.close();
  await ingest?.close();
  await h?.close();
});

const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
  fetch(`${base}${path}`, { method: 'POST', body, headers });

const code = async (res: Response) => ((await res.json()) as { error?: { code: string } }).error?.code;

async function queued(res: Response) {
  const { data } = (await res.json()) as { data: { id: string } };
  return (await h.queuedItems()).find((i) => i.id === data.id);
}

/** Sends the head and `firstBytes` of a body announced as `contentLength`, and answers what comes back. */
function postPartly(path: string, contentLength: number, firstBytes: Buffer) {
  return new Promise<{ status: number | undefined; body: string }>((resolve, reject) => {
    const req = request(`${base}${path}`, { method: 'POST', headers: { 'content-length': contentLength } });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => {
        resolve({ status: res.statusCode, body });
        req.destroy();
      });
    });
    req.on('error', reject);
    req.write(firstBytes);
  });
}

describe('HTTP gateway: Content-Encoding, as body-parser read it', () => {
  const body = JSON.stringify({ deviceName: 'zipped', Temperature: 21.5 });

  it.each([
    ['gzip', gzipSync],
    ['deflate', deflateSync],
    ['br', brotliCompressSync],
  ])('queues the decoded text of a %s body', async (encoding, encode) => {
    const res = await post(`/gateway/submit/${key}`, encode(body), { 'content-encoding': encoding });
    expect(res.status).toBe(202);
    expect(await queued(res)).toMatchObject({ body, bodyIsHex: false });
  });

  it('applies the size limit to the decoded size, not to the compressed one', async () => {
    const fits = await post(`/raw/${key}?deviceName=d`, gzipSync('a'.repeat(LIMIT_BYTES)), {
      'content-encoding': 'gzip',
    });
    expect(fits.status).toBe(202);
    const bomb = await post(`/raw/${key}?deviceName=d`, gzipSync('a'.repeat(10_000_000)), {
      'content-encoding': 'gzip',
    });
    expect([bomb.status, await code(bomb)]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
  });

  it('refuses an unsupported encoding with 415 and a corrupt or truncated gzip body with 400 INVALID_JSON', async () => {
    const compress = await post(`/raw/${key}?deviceName=d`, Buffer.from(body), { 'content-encoding': 'compress' });
    expect([compress.status, await code(compress)]).toEqual([415, 'UNSUPPORTED_ENCODING']);
    const zipped = gzipSync(body);
    for (const [encoding, bytes] of [
      ['gzip', Buffer.from('not gzip at all')],
      ['gzip', zipped.subarray(0, zipped.length - 6)],
    ] as const) {
      const res = await post(`/raw/${key}?deviceName=d`, bytes, { 'content-encoding': encoding });
      expect([res.status, await code(res)]).toEqual([400, 'INVALID_JSON']);
    }
  });
});

describe('HTTP gateway: oversize and aborted bodies', () => {
  // Node's own timeouts (60 s for the head, 300 s for the request) would outlast these tests' 30 s:
  // a cut-off within them is the configured one, however slow the machine.
  it(
    'cuts off a client that stops sending its body, after VIGIL_HTTP_REQUEST_TIMEOUT_MS',
    { timeout: 30_000 },
    async () => {
      const res = await postPartly(`/raw/${key}?deviceName=d`, 10_000_000, Buffer.from('abc')).catch(
        (err: unknown) => ({ status: undefined, body: String(err) }),
      );
      // Node answers 408 (or drops the connection) once the request timeout passes; checked each second.
      expect([408, undefined]).toContain(res.status);
    },
  );

  it(
    'closes a connection whose request head does not arrive within VIGIL_HTTP_HEADERS_TIMEOUT_MS',
    { timeout: 30_000 },
    async () => {
      const socket = connect(gateway.port, '127.0.0.1');
      socket.write(`POST /raw/${key} HTTP/1.1\r\nHost: x\r\n`);
      const answer = await new Promise<string>((resolve) => {
        let text = '';
        socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
        socket.on('close', () => resolve(text));
      });
      expect(answer === '' || answer.startsWith('HTTP/1.1 408')).toBe(true);
    },
  );

  it('answers 413 intact to a body far over the limit, sent with or without Content-Length', async () => {
    const huge = Buffer.alloc(512 * 1024, 0x61);
    const declared = await post(`/raw/${key}?deviceName=d`, huge);
    expect([declared.status, await code(declared)]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
    const streamed = await fetch(`${base}/raw/${key}?deviceName=d`, {
      method: 'POST',
      body: new Blob([huge]).stream(),
      duplex: 'half',
    });
    expect([streamed.status, await code(streamed)]).toEqual([413, 'PAYLOAD_TOO_LARGE']);
  });

  it('logs a body cut off by the client as INVALID_JSON', async () => {
    const k = await h.createApiKey('aborts');
    await new Promise<void>((resolve) => {
      const req = request(`${base}/raw/${k}?deviceName=cut`, {
        method: 'POST',
        headers: { 'content-length': 100 },
      });
      req.on('error', () => resolve());
      // The client stops mid-body a moment after its bytes went out, as a dropped device would.
      req.write('only some bytes', () => setTimeout(() => req.destroy(), 50));
    });
    const logged = await eventually(
      async () => (await ingest.ingestLog.list('aborts', 10)).map((e) => [e.code, e.deviceName]),
      { until: (entries) => entries.length > 0, message: 'the cut-off body in the ingestion log' },
    );
    expect(logged).toEqual([['INVALID_JSON', 'cut']]);
  });
});

describe('HTTP gateway: targets and answers, as express gave them', () => {
  it('routes paths case-insensitively, with one optional trailing slash', async () => {
    expect((await post(`/GATEWAY/Submit/${key}`, '{"deviceName":"d"}')).status).toBe(202);
    expect((await post(`/raw/${key}/?deviceName=d`, 'x')).status).toBe(202);
    expect(await code(await post(`/raw/${key}//?deviceName=d`, 'x'))).toBe('NOT_FOUND');
  });

  it('answers 400 BAD_REQUEST, not 405, when the key segment is not valid percent-encoding', async () => {
    expect([(await post('/raw/%E0%A4%A', 'x')).status, (await fetch(`${base}/raw/%ZZ`)).status]).toEqual([
      400, 400,
    ]);
    expect(await code(await post('/rawpreparseronly/%', 'x'))).toBe('BAD_REQUEST');
  });

  it('ignores a repeated ?deviceName= and decodes + as a space', async () => {
    const twice = await post(`/raw/${key}?deviceName=a&deviceName=b`, 'x');
    expect([twice.status, await code(twice)]).toEqual([400, 'MISSING_DEVICE_NAME']);
    const plus = await post(`/raw/${key}?deviceName=dev+2`, 'x');
    expect(await queued(plus)).toMatchObject({ deviceName: 'dev 2' });
  });

  it('answers JSON with Content-Length and no X-Powered-By or ETag', async () => {
    const res = await post(`/raw/${key}?deviceName=d`, 'x');
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(Number(res.headers.get('content-length'))).toBe((await res.arrayBuffer()).byteLength);
    expect([res.headers.get('x-powered-by'), res.headers.get('etag')]).toEqual([null, null]);
  });
});
