/**
 * The `gateway` and `mqtt` roles: one ingestion core (keys, limits, micro-batches into the queue)
 * shared by the HTTP gateway, the embedded MQTT broker and the bridge to an external broker.
 * Started after every other role, so that taking traffic is the first thing to stop.
 */
import { startGateway } from '../gateway/start-gateway.ts';
import { createIngestService } from '../ingest/ingest-service.ts';
import { startMqttBridge } from '../mqtt/bridge.ts';
import { startMqttBroker } from '../mqtt/broker.ts';
import type { RoleContext } from './role-context.ts';

/** Bound ports (0 for an entry that does not run). */
export interface IngestPorts {
  gateway: number;
  mqtt: number;
}

/** Starts the entries of the process's roles, each registered to stop in `ctx.lifecycle`; their ports. */
export async function startIngestRoles(ctx: RoleContext): Promise<IngestPorts> {
  const { config, lifecycle } = ctx;
  const roles = new Set(config.roles);
  const ports: IngestPorts = { gateway: 0, mqtt: 0 };
  const deps = {
    config,
    keys: ctx.keys,
    redis: ctx.redis,
    queueConnection: ctx.connections.blocking('vigil-queue'),
    log: ctx.log,
    metrics: ctx.metrics,
  };
  const ingest = createIngestService(deps);
  lifecycle.add('ingest', () => ingest.close());
  if (roles.has('gateway')) {
    const gateway = await startGateway({ ...deps, ingest });
    ports.gateway = gateway.port;
    lifecycle.add('gateway', () => gateway.close());
  }
  if (roles.has('mqtt') && config.mqttEnabled) {
    const broker = await startMqttBroker({ ...deps, ingest });
    ports.mqtt = broker.port;
    lifecycle.add('mqtt broker', () => broker.close());
  }
  if (roles.has('mqtt') && config.mqttBridgeUrl) {
    const bridge = await startMqttBridge({ ...deps, ingest });
    lifecycle.add('mqtt bridge', () => bridge.close());
  }
  return ports;
}
