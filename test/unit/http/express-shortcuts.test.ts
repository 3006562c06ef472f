/**
 * The HTTP layer's shortcuts against what they replace: express's prototypes given to requests and
 * responses by the server, and sendJson against res.json — same status, headers (in order) and body
 * for every method and conditional request.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import helmet from 'helmet';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../../../src/http/http-server.ts';
import { sendJson } from '../../../src/http/send-json.ts';

const BODY = { status: 'success', data: { text: 'ü'.repeat(600), list: [1, 2, 3] } };

function appWith(security: express.RequestHandler) {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(security);
  app.all('/express', (_req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.json(BODY);
  });
  app.all('/short', (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    sendJson(req, res, BODY);
  });
  app.get('/prototypes', (req, res) => {
    res.json({
      request: Object.getPrototypeOf(req) === app.request,
      response: Object.getPrototypeOf(res) === app.response,
    });
  });
  return app;
}

interface Answer {
  status: number;
  rawHeaders: string[];
  body: string;
}

function send(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
) {
  return new Promise<Answer>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, rawHeaders: res.rawHeaders, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The header lines without Date, which changes from one answer to the next. */
const lines = (a: Answer) =>
  a.rawHeaders.flatMap((v, i, all) =>
    i % 2 === 0 && v.toLowerCase() !== 'date' ? [`${v}: ${all[i + 1]}`] : [],
  );

let port: number;
let close: () => void;

beforeAll(async () => {
  const security = helmet({
    contentSecurityPolicy: {
      useDefaults: false,
      directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] },
    },
    strictTransportSecurity: false,
  });
  const server = createHttpServer(appWith(security), { headersTimeoutMs: 5000, requestTimeoutMs: 5000 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  close = () => server.close();
});

afterAll(() => close());

describe('createHttpServer', () => {
  it("makes requests and responses with the express app's prototypes", async () => {
    const answer = await send(port, 'GET', '/prototypes');
    expect(JSON.parse(answer.body)).toEqual({ request: true, response: true });
  });
});

describe('sendJson', () => {
  const cases: [string, Record<string, string>, string?][] = [
    ['GET', {}],
    ['HEAD', {}],
    ['POST', { 'content-type': 'application/json' }, '{"a":1}'],
    ['GET', { 'if-none-match': '*' }],
    ['HEAD', { 'if-none-match': '*' }],
    ['GET', { 'if-modified-since': new Date().toUTCString() }],
    ['GET', { 'if-none-match': '"abc"' }],
    ['POST', { 'if-none-match': '*' }],
  ];
  for (const [method, headers, body] of cases) {
    it(`answers ${method} ${JSON.stringify(headers)} as res.json does`, async () => {
      const viaExpress = await send(port, method, '/express', headers, body);
      const short = await send(port, method, '/short', headers, body);
      expect(short.status).toBe(viaExpress.status);
      expect(lines(short)).toEqual(lines(viaExpress));
      expect(short.body).toBe(viaExpress.body);
    });
  }
});
