import type { Config } from '../config/schema.ts';
import { createIngestService, type IngestDeps, type IngestService } from '../ingest/ingest-service.ts';
import { createHttpServer } from '../http/http-server.ts';
import { closeServer, listen } from '../lib/listen.ts';
import { createGatewayApp } from './gateway-app.ts';

export interface GatewayDeps extends IngestDeps {
  config: IngestDeps['config'] &
    Pick<Config, 'gatewayPort' | 'host' | 'httpHeadersTimeoutMs' | 'httpRequestTimeoutMs'>;
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
  const { config } = deps;
  const server = createHttpServer(createGatewayApp({ config, log: deps.log, ingest }), {
    headersTimeoutMs: config.httpHeadersTimeoutMs,
    requestTimeoutMs: config.httpRequestTimeoutMs,
  });
  let port: number;
  try {
    port = await listen(server, config.gatewayPort, config.host, 'VIGIL_GATEWAY_PORT');
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
