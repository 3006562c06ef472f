/**
 * What both HTTP surfaces send with every answer (security headers, no caching of anything that
 * may carry a token) and what they refuse in a request's head (Authorization given twice).
 */
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startGateway, type RunningGateway } from '../../src/gateway/start-gateway.ts';
import { createIngestService, type IngestService } from '../../src/ingest/ingest-service.ts';
import { startApiHarness, type ApiHarness } from './api-harness.ts';
import { createIngestHarness, type IngestHarness } from './ingest-harness.ts';

let api: ApiHarness;
let token: string;
let apiKey: string;
let ih: IngestHarness;
let ingest: IngestService;
let gateway: RunningGateway;
const cleanups: (() => unknown)[] = [];

beforeAll(async () => {
  api = await startApiHarness({}, (fn) => cleanups.push(fn));
  ({ token, apiKey } = await api.seedEnvironment('hard'));
  await api.admin.createUser('hard', 'ops', 'correct horse battery');
  ih = createIngestHarness();
  ingest = createIngestService(ih);
  gateway = await startGateway({ ...ih, ingest });
});

afterAll(async () => {
  await gateway?.close();
  await ingest?.close();
  await ih?.close();
  for (const fn of cleanups.reverse()) await fn();
});

/** A GET with exactly the raw header lines given (fetch and http.request merge or refuse repeated ones). */
function rawRequest(url: string, headers: [string, string][]) {
  const { port, pathname } = new URL(url);
  return new Promise<{ status: number; body: string }>((resolve, reject) => {
    const socket = connect(Number(port), '127.0.0.1');
    const lines = headers.map(([name, value]) => `${name}: ${value}\r\n`).join('');
    socket.write(`GET ${pathname} HTTP/1.1\r\nHost: 127.0.0.1\r\n${lines}Connection: close\r\n\r\n`);
    let text = '';
    socket.on('data', (chunk: Buffer) => (text += chunk.toString()));
    socket.on('error', reject);
    socket.on('close', () => {
      const [head = '', body = ''] = text.split('\r\n\r\n');
      resolve({ status: Number(head.split(' ')[1]), body });
    });
  });
}

const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'content-security-policy': "default-src 'none';frame-ancestors 'none'",
  'x-frame-options': 'SAMEORIGIN',
  'referrer-policy': 'no-referrer',
  'cross-origin-resource-policy': 'same-origin',
};

describe('HTTP hardening', () => {
  it('sends security headers on the read API, successes and errors alike', async () => {
    for (const res of [
      await fetch(`${api.baseUrl}/devices/list`, { headers: { authorization: `Bearer ${token}` } }),
      await fetch(`${api.baseUrl}/devices/list`),
      await fetch(`${api.baseUrl}/nowhere`),
    ]) {
      for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(res.headers.get(name)).toBe(value);
      expect(res.headers.get('x-powered-by')).toBeNull();
    }
  });

  it('sends security headers on the gateway', async () => {
    const res = await fetch(`http://127.0.0.1:${gateway.port}/gateway/submit/vk_nope`, { method: 'POST', body: '{}' });
    expect(res.status).toBe(401);
    for (const [name, value] of Object.entries(SECURITY_HEADERS)) expect(res.headers.get(name)).toBe(value);
  });

  it('marks answers that carry a token, and every read answer, Cache-Control: no-store', async () => {
    const login = await fetch(`${api.baseUrl}/login/${apiKey}`, {
      method: 'POST',
      body: JSON.stringify({ username: 'ops', password: 'correct horse battery' }),
    });
    expect(login.status).toBe(200);
    expect(login.headers.get('cache-control')).toBe('no-store');
    const list = await fetch(`${api.baseUrl}/devices/list`, { headers: { authorization: `Bearer ${token}` } });
    expect(list.headers.get('cache-control')).toBe('no-store');
  });

  it('marks every refusal of the read API no-store too, and leaves the console root and the 404 as before', async () => {
    const base = api.baseUrl;
    const auth = { authorization: `Bearer ${token}` };
    const answers = {
      unauthorized: await fetch(`${base}/devices/list`),
      forbiddenMethod: await fetch(`${base}/devices/list`, { method: 'DELETE', headers: auth }),
      badEncoding: await fetch(`${base}/login/%E0%A4%A`, { method: 'POST', body: '{}' }),
      badBody: await fetch(`${base}/devices/list`, { method: 'POST', headers: auth, body: '{' }),
      tooLarge: await fetch(`${base}/devices/list`, { method: 'POST', headers: auth, body: 'x'.repeat(3 * 1024 * 1024) }),
      notFound: await fetch(`${base}/nowhere`),
      openApi: await fetch(`${base}/openapi.json`),
    };
    for (const [name, res] of Object.entries(answers)) {
      expect(res.headers.get('cache-control'), name).toBe('no-store');
      expect(res.headers.get('x-content-type-options'), name).toBe('nosniff');
    }
    expect(Object.values(answers).map((r) => r.status)).toEqual([401, 405, 400, 400, 413, 404, 200]);
    const root = await fetch(`${base}/`, { redirect: 'manual' });
    expect(root.status).toBe(302);
    expect(root.headers.get('cache-control')).toBeNull();
    expect(root.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('refuses a request with two Authorization headers with 400 BAD_REQUEST, whichever comes first', async () => {
    for (const pair of [
      [`Bearer ${token}`, 'Bearer vt_other'],
      ['Bearer vt_other', `Bearer ${token}`],
    ]) {
      const res = await rawRequest(
        `${api.baseUrl}/devices/list`,
        pair.map((v) => ['Authorization', v] as [string, string]),
      );
      expect(res.status).toBe(400);
      expect(JSON.parse(res.body)).toMatchObject({ status: 'error', error: { code: 'BAD_REQUEST' } });
    }
    const one = await rawRequest(`${api.baseUrl}/devices/list`, [['Authorization', `Bearer ${token}`]]);
    expect(one.status).toBe(200);
  });
});
