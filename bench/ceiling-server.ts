/**
 * The servers of the ceiling measurements, each in its own process like Vigil: `http` (bare
 * node:http JSON POST echo), `express` (express hello-world JSON POST), `aedes` (bare broker with
 * an in-process QoS 1 subscriber). Sends `{port}` over IPC and exits when the bench disconnects.
 */
import { createServer as createHttpServer } from 'node:http';
import { createServer as createNetServer, type Server } from 'node:net';
import express from 'express';
import { Aedes } from 'aedes';

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  return typeof addr === 'object' && addr ? addr.port : 0;
}

async function start(kind: string): Promise<number> {
  if (kind === 'http') {
    const server = createHttpServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const echo = JSON.stringify(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        res.writeHead(202, { 'content-type': 'application/json' });
        res.end(echo);
      });
    });
    return listen(server);
  }
  if (kind === 'express') {
    const app = express();
    app.post('/', express.json(), (_req, res) => {
      res.status(202).json({ hello: 'world' });
    });
    return listen(createHttpServer(app));
  }
  if (kind === 'aedes') {
    const broker = await Aedes.createBroker();
    let received = 0;
    broker.subscribe(
      'bench/#',
      (_packet, cb) => {
        received++;
        cb();
      },
      () => undefined,
    );
    process.on('message', () => process.send?.({ received }));
    return listen(createNetServer((socket) => broker.handle(socket)));
  }
  throw new Error(`unknown ceiling server ${kind}`);
}

const port = await start(process.argv[2] ?? '');
process.on('disconnect', () => process.exit(0));
process.send?.({ port });
