/**
 * A webhook receiver on loopback for the alerting scenarios: answers 204 at once, counts what it
 * got, verifies the Standard Webhooks signature of a sample, and hands each body with the time it
 * arrived to `onBody` (latency measurements).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

/** Every n-th request has its signature checked (checking all would load the bench process). */
const VERIFY_EVERY = 100;

export interface Receiver {
  url: string;
  received: number;
  unverified: number;
  /** Signing secret per path. */
  secrets: Map<string, string>;
  close(): Promise<void>;
}

export async function startReceiver(onBody?: (body: string, atMs: number) => void): Promise<Receiver> {
  const receiver: Receiver = {
    url: '',
    received: 0,
    unverified: 0,
    secrets: new Map(),
    close: () => Promise.resolve(),
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const atMs = Date.now();
      receiver.received++;
      const body = Buffer.concat(chunks).toString('utf8');
      if (receiver.received % VERIFY_EVERY === 1) {
        try {
          new Webhook(receiver.secrets.get(req.url ?? '') ?? '').verify(
            body,
            req.headers as Record<string, string>,
          );
        } catch {
          receiver.unverified++;
        }
      }
      res.writeHead(204).end();
      onBody?.(body, atMs);
    });
  });
  server.keepAliveTimeout = 30_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  receiver.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  receiver.close = () => {
    server.closeAllConnections();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return receiver;
}
