/**
 * The HTTP layer's shortcut against what it replaces: express's prototypes given to requests and
 * responses by the server.
 */
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHttpServer } from '../../../src/http/http-server.ts';

const app = express();
app.get('/prototypes', (req, res) => {
  res.json({
    request: Object.getPrototypeOf(req) === app.request,
    response: Object.getPrototypeOf(res) === app.response,
  });
});

function get(port: number, path: string) {
  return new Promise<string>((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve(text));
    });
    req.on('error', reject);
    req.end();
  });
}

let port: number;
let close: () => void;

beforeAll(async () => {
  const server = createHttpServer(app, { headersTimeoutMs: 5000, requestTimeoutMs: 5000 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  close = () => server.close();
});

afterAll(() => close());

describe('createHttpServer', () => {
  it("makes requests and responses with the express app's prototypes", async () => {
    expect(JSON.parse(await get(port, '/prototypes'))).toEqual({ request: true, response: true });
  });
});
