/**
 * The demo's webhook receiver: a small HTTP server on loopback that verifies each notification's
 * Standard Webhooks signature (with the `standardwebhooks` package, as any receiver would) and
 * prints it on one line.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';

export interface DemoReceiver {
  url: string;
  stop(): Promise<void>;
}

interface Notification {
  type: string;
  environment: string;
  data: {
    eventStatus?: string;
    displayName?: string;
    sensorName?: string;
    eventMessage?: string;
    count?: number;
    message?: string;
  };
}

function describe(n: Notification): string {
  const d = n.data;
  if (n.type === 'digest') return `digest of ${d.count ?? 0} notifications`;
  if (n.type === 'test') return d.message ?? 'test';
  return `${d.eventStatus ?? ''} · ${d.displayName ?? ''} · ${d.sensorName ?? ''}: ${d.eventMessage ?? ''}`;
}

/** Listens on `port` (0 or taken: any free port) at /vigil-demo; prints with `print`. */
export async function startDemoReceiver(
  secret: string,
  port: number,
  print: (line: string) => void,
): Promise<DemoReceiver> {
  const webhook = new Webhook(secret);
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        const n = webhook.verify(body, req.headers as Record<string, string>) as Notification;
        print(
          `${n.type} (${n.environment}) ${describe(n)}  [signature verified, ${String(req.headers['webhook-id'])}]`,
        );
        res.writeHead(204).end();
      } catch (err) {
        print(`REFUSED a request whose signature does not verify: ${(err as Error).message}`);
        res.writeHead(401).end();
      }
    });
  });
  const listen = (p: number) =>
    new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(p, '127.0.0.1', () => {
        server.off('error', reject);
        resolve();
      });
    });
  await listen(port).catch(() => listen(0));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/vigil-demo`,
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
