/**
 * The bridge: with VIGIL_MQTT_BRIDGE_URL set, Vigil subscribes with QoS 1 to the
 * gateway topic forms on an external broker — as `$share/<group>/…` shared subscriptions, so that
 * several Vigil processes split the traffic — and acknowledges each message only after it is
 * queued (mqtt.js sends the PUBACK when `handleMessage` calls back). Sessions are persistent
 * (`clean: false`, stable client ids): a message not yet acknowledged when Vigil stops is
 * redelivered by the broker.
 */
import { hostname } from 'node:os';
import mqtt, { type IPublishPacket, type MqttClient } from 'mqtt';
import { isAppError } from '../errors/app-error.ts';
import type { Config } from '../config/schema.ts';
import { createIngestService, type IngestDeps, type IngestService } from '../ingest/ingest-service.ts';
import { GATEWAY_KINDS, GATEWAY_PATHS, isJsonGateway } from '../domain/ingest-item.ts';
import { parsePublishTopic } from './topics.ts';
import { maskUrl } from '../lib/mask-url.ts';

export interface BridgeDeps extends IngestDeps {
  config: IngestDeps['config'] &
    Pick<
      Config,
      | 'mqttBridgeUrl'
      | 'mqttBridgeGroup'
      | 'mqttBridgeShared'
      | 'mqttBridgeClientId'
      | 'mqttBridgeConnections'
    >;
  ingest?: IngestService;
}

export interface RunningBridge {
  /** Client ids of the bridge's connections. */
  clientIds: string[];
  /** Disconnects (unacknowledged messages stay with the external broker), then closes what it created. */
  close(): Promise<void>;
}

const SUBSCRIBE_WAIT_MS = 5000;
const RETRY_MIN_MS = 200;
const RETRY_MAX_MS = 5000;

/** The topic filters of every gateway kind: `<path>/+` and, for raw kinds, `<path>/+/+`. */
export function bridgeFilters(group: string, shared: boolean): string[] {
  const forms = GATEWAY_KINDS.flatMap((kind) => {
    const path = GATEWAY_PATHS[kind];
    return isJsonGateway(kind) ? [`${path}/+`] : [`${path}/+`, `${path}/+/+`];
  });
  return shared ? forms.map((f) => `$share/${group}/${f}`) : forms;
}

export async function startMqttBridge(deps: BridgeDeps): Promise<RunningBridge> {
  const { config } = deps;
  const url = config.mqttBridgeUrl;
  if (url === undefined) throw new Error('VIGIL_MQTT_BRIDGE_URL is not set');
  const ownsIngest = deps.ingest === undefined;
  const ingest = deps.ingest ?? createIngestService(deps);
  const log = deps.log.child({ component: 'mqtt-bridge' });
  const filters = bridgeFilters(config.mqttBridgeGroup, config.mqttBridgeShared);
  const base = config.mqttBridgeClientId ?? `vigil-${config.mqttBridgeGroup}-${hostname()}`;
  const count = config.mqttBridgeShared ? config.mqttBridgeConnections : 1;
  let closing = false;

  /** Queues one message, retrying while the failure is transient; false when the bridge stops first. */
  const deliver = async (packet: IPublishPacket, clientId: string): Promise<boolean> => {
    const topic = parsePublishTopic(packet.topic);
    if (!topic?.key) return true;
    const body = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    for (let delayMs = RETRY_MIN_MS; !closing; delayMs = Math.min(delayMs * 2, RETRY_MAX_MS)) {
      try {
        const key = await ingest.authenticate(topic.key, 'bridge', topic.kind);
        await ingest.submit({
          kind: topic.kind,
          via: 'bridge',
          key,
          body,
          client: `bridge:${clientId}`,
          ...(topic.deviceName === undefined ? {} : { deviceName: topic.deviceName }),
        });
        return true;
      } catch (err) {
        // A refusal no retry can fix (the catalogue's retryable: false) is acknowledged, not redelivered.
        if (isAppError(err) && !err.retryable) return true;
        log.warn(
          { code: isAppError(err) ? err.code : 'INTERNAL', retryInMs: delayMs },
          'bridge cannot queue yet',
        );
        await new Promise((r) => setTimeout(r, delayMs));
      }
    }
    return false;
  };

  const connectOne = (clientId: string): { client: MqttClient; subscribed: Promise<void> } => {
    const client = mqtt.connect(url, {
      clientId,
      clean: false,
      reconnectPeriod: 1000,
      connectTimeout: 10_000,
    });
    client.handleMessage = (packet, callback) => {
      void deliver(packet, clientId).then((delivered) => {
        // Without the callback mqtt.js sends no PUBACK: the broker keeps the message for redelivery.
        if (delivered) callback();
      });
    };
    client.on('error', (err) => log.warn({ err, clientId }, 'bridge connection error'));
    const subscribed = new Promise<void>((resolve) => {
      client.on('connect', () => {
        client.subscribe(filters, { qos: 1 }, (err) => {
          if (err) log.error({ err, clientId }, 'bridge subscription refused');
          else resolve();
        });
      });
    });
    return { client, subscribed };
  };

  const connections = Array.from({ length: count }, (_, i) =>
    connectOne(count === 1 ? base : `${base}-${i}`),
  );
  const ready = Promise.all(connections.map((c) => c.subscribed));
  const timedOut = await Promise.race([
    ready.then(() => false),
    new Promise<boolean>((r) => setTimeout(() => r(true), SUBSCRIBE_WAIT_MS).unref()),
  ]);
  const loggedUrl = maskUrl(url) ?? '[not a URL]';
  if (timedOut) log.warn({ url: loggedUrl }, 'external broker not reachable yet; the bridge keeps trying');
  else log.info({ url: loggedUrl, connections: count, shared: config.mqttBridgeShared }, 'bridge subscribed');

  let closed: Promise<void> | undefined;
  return {
    clientIds: connections.map((c) => c.client.options.clientId ?? ''),
    close() {
      closed ??= (async () => {
        closing = true;
        await Promise.allSettled(connections.map((c) => c.client.endAsync(true)));
        if (ownsIngest) await ingest.close();
      })();
      return closed;
    },
  };
}
