/**
 * A proxy in front of the test InfluxDB that holds each query and/or write for a while before
 * passing it on: InfluxDB slow to answer, without being down.
 */
import { createServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';

export async function delayingInfluxProxy(
  target: string,
  delays: { queryMs?: number; writeMs?: number },
): Promise<string> {
  const { port } = new URL(target);
  const server = createServer((req, res) => {
    const forward = () => {
      const upstream = request(
        { host: '127.0.0.1', port, path: req.url, method: req.method, headers: req.headers },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on('error', () => res.destroy());
      req.pipe(upstream);
    };
    const delayMs = req.url?.startsWith('/query')
      ? delays.queryMs
      : req.url?.startsWith('/write')
        ? delays.writeMs
        : 0;
    if (delayMs) setTimeout(forward, delayMs);
    else forward();
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
