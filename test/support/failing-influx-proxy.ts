/**
 * A proxy in front of the test InfluxDB that fails part-way: queries pass until their answers have
 * held `rowsBeforeFailure` rows in all, and every query after that gets a 500 with an error body, as
 * an InfluxDB that breaks down in the middle of a long read. Writes and pings always pass.
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';

export async function failingInfluxProxy(
  target: string,
  opts: { rowsBeforeFailure: number },
): Promise<string> {
  const { port } = new URL(target);
  let rows = 0;
  const server = createServer((req, res) => {
    if (req.url?.startsWith('/query') && rows >= opts.rowsBeforeFailure) {
      req.resume();
      res.writeHead(500, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: 'injected failure' }));
      return;
    }
    const upstream = request(
      { host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers },
      (answer) => {
        const chunks: Buffer[] = [];
        answer.on('data', (c: Buffer) => chunks.push(c));
        answer.on('end', () => {
          const body = Buffer.concat(chunks);
          if (req.url?.startsWith('/query')) rows += rowsOf(body);
          const headers = { ...answer.headers };
          delete headers['transfer-encoding'];
          res.writeHead(answer.statusCode ?? 502, { ...headers, 'content-length': String(body.length) });
          res.end(body);
        });
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  onTestFinished(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Rows in an InfluxDB 1.x query answer (`results[].series[].values`). */
function rowsOf(body: Buffer): number {
  try {
    const answer = JSON.parse(body.toString('utf8')) as { results?: { series?: { values?: unknown[] }[] }[] };
    return (answer.results ?? [])
      .flatMap((r) => r.series ?? [])
      .reduce((n, s) => n + (s.values?.length ?? 0), 0);
  } catch {
    return 0;
  }
}
