/**
 * InfluxDB with authentication on: the client sends its credentials as a Basic Authorization
 * header, which InfluxDB accepts, and never as u/p query parameters (those end up in access logs).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startInflux, type LocalService } from '../../scripts/lib/local-services.ts';
import { createInfluxClient, InfluxError } from '../../src/history/influx-client.ts';

let dir: string;
let influx: LocalService;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'vigil-influx-auth-'));
  influx = await startInflux({ dataDir: dir, authEnabled: true });
  // With auth on and no user yet, InfluxDB 1.x accepts only the statement creating the first admin.
  const res = await fetch(`${influx.url}/query`, {
    method: 'POST',
    body: new URLSearchParams({ q: "CREATE USER vigil WITH PASSWORD 's3cret pass' WITH ALL PRIVILEGES" }),
  });
  expect(res.status).toBe(200);
});

afterAll(async () => {
  await influx?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('InfluxDB credentials', () => {
  it('writes and queries with a Basic Authorization header', async () => {
    const client = createInfluxClient({ url: influx.url, database: 'authdb', username: 'vigil', password: 's3cret pass' });
    await client.query('CREATE DATABASE authdb', { database: null });
    await client.write('m,tag=a value=1 1000', { precision: 'ms' });
    const [result] = await client.query('SELECT value FROM m');
    expect(result?.[0]?.values).toEqual([[1000, 1]]);
    expect(await client.ping()).toBe(true);
  });

  it('is refused without credentials or with a wrong password', async () => {
    for (const creds of [{}, { username: 'vigil', password: 'wrong' }]) {
      const client = createInfluxClient({ url: influx.url, database: 'authdb', ...creds });
      const err = await client.query('SHOW DATABASES').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(InfluxError);
      expect((err as InfluxError).status).toBe(401);
    }
  });

  it('never puts the credentials in a request target', async () => {
    const targets: string[] = [];
    const proxy = createServer((req, res) => {
      targets.push(req.url ?? '');
      const upstream = request(`${influx.url}${req.url}`, { method: req.method, headers: req.headers }, (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      });
      req.pipe(upstream);
    });
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
    const port = (proxy.address() as { port: number }).port;
    try {
      const client = createInfluxClient({
        url: `http://127.0.0.1:${port}`,
        database: 'authdb',
        username: 'vigil',
        password: 's3cret pass',
      });
      await client.write('m,tag=b value=2 2000', { precision: 'ms' });
      await client.query('SELECT value FROM m');
    } finally {
      proxy.closeAllConnections();
      await new Promise<void>((r) => proxy.close(() => r()));
    }
    expect(targets.length).toBe(2);
    for (const t of targets) expect(t).not.toMatch(/[?&](u|p)=/);
    expect(readFileSync(join(dir, 'influxd.log'), 'utf8')).not.toContain('s3cret');
  });
});
