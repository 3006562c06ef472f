import { createServer } from 'node:http';
import { createIngestService, type IngestDeps, type IngestService } from '../ingest/ingest-service.ts';
import { closeServer, listen } from '../ops/listen.ts';
import { createGatewayHandler } from './gateway-handler.ts';

const REQUEST_TIMEOUT_MS = 30_000;

export interface GatewayDeps extends IngestDeps {
  /** The process's shared ingestion core; created (and closed with the gateway) when absent. */
  ingest?: IngestService;
}

export interface RunningGateway {
  port: number;
  /** Stops taking requests, lets answers in flight finish, then closes what it created. Safe twice. */
  close(): Promise<void>;
}

/** Serves the HTTP gateway on `config.gatewayPort` (0 = any free port). */
export async function startGateway(deps: GatewayDeps): Promise<RunningGateway> {
  const ownsIngest = deps.ingest === undefined;
  const ingest = deps.ingest ?? createIngestService(deps);
  const server = createServer(createGatewayHandler({ config: deps.config, log: deps.log, ingest }));
  // A device that takes longer than this to send a ≤ 256 KiB body is stalled, not slow.
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  let port: number;
  try {
    port = await listen(server, deps.config.gatewayPort, deps.config.host, 'VIGIL_GATEWAY_PORT');
  } catch (err) {
    if (ownsIngest) await ingest.close();
    throw err;
  }
  let closing: Promise<void> | undefined;
  return {
    port,
    close() {
      closing ??= (async () => {
        try {
          await closeServer(server);
        } finally {
          if (ownsIngest) await ingest.close();
        }
      })();
      return closing;
    },
  };
}
