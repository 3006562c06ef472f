/**
 * The bridge: with VIGIL_MQTT_BRIDGE_URL set, Vigil connects to an external broker with MQTT 5,
 * subscribes with QoS 1 to the gateway topic forms and to the ChirpStack applications of
 * VIGIL_MQTT_BRIDGE_CHIRPSTACK — as `$share/<group>/…` shared subscriptions, so that several Vigil
 * processes split the traffic — and acknowledges each message only after it is queued (mqtt.js
 * sends the PUBACK when `handleMessage` calls back). Sessions are persistent (`clean: false`, a
 * session expiry interval, stable client ids): a message not yet acknowledged when Vigil stops is
 * redelivered by the broker.
 */
import { hostname } from 'node:os';
import mqtt, { type IPublishPacket, type MqttClient } from 'mqtt';
import { isAppError } from '../errors/app-error.ts';
import type { Config } from '../config/schema.ts';
import type { ChirpstackApplications } from '../config/chirpstack-applications.ts';
import {
  createIngestService,
  type IngestDeps,
  type IngestService,
  type Submission,
} from '../ingest/ingest-service.ts';
import { GATEWAY_KINDS, GATEWAY_PATHS, isJsonGateway } from '../domain/ingest-item.ts';
import { sampledWarning, type Logger } from '../log/logger.ts';
import { chirpstackFilter, parseChirpstackTopic, parsePublishTopic } from './topics.ts';
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
      | 'mqttBridgeChirpstack'
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
/**
 * How long the external broker keeps a bridge connection's session — its subscriptions and the
 * messages queued for it — once the connection is gone, in seconds: a day, far beyond a restart.
 * Not forever: a client id no process uses any more (a renamed host) keeps receiving its share of
 * a shared subscription until its session expires.
 */
const SESSION_EXPIRY_SECONDS = 24 * 60 * 60;

/**
 * The topic filters the bridge subscribes to: `<path>/+` of every gateway kind, `<path>/+/+` of the
 * raw kinds, and `application/<id>/device/+/event/+` of each ChirpStack application given.
 */
export function bridgeFilters(
  group: string,
  shared: boolean,
  chirpstackApplicationIds: Iterable<string> = [],
): string[] {
  const forms = GATEWAY_KINDS.flatMap((kind) => {
    const path = GATEWAY_PATHS[kind];
    return isJsonGateway(kind) ? [`${path}/+`] : [`${path}/+`, `${path}/+/+`];
  });
  forms.push(...[...chirpstackApplicationIds].map(chirpstackFilter));
  return shared ? forms.map((f) => `$share/${group}/${f}`) : forms;
}

/** What a message is to be queued as: the API key it comes with and the submission's own fields. */
interface Route {
  apiKey: string;
  submission: Pick<Submission, 'kind' | 'deviceName' | 'event'>;
  /** The ChirpStack application whose key it is (ChirpStack topics only). */
  applicationId?: string;
}

/**
 * Where a message goes, or why it is dropped: a topic that is not Vigil's (a key-less form, which
 * names no key on a broker that knows none), or the events of a ChirpStack application not mapped.
 */
function routeOf(topicName: string, applications: ChirpstackApplications): Route | { unmapped?: string } {
  const chirpstack = parseChirpstackTopic(topicName);
  if (chirpstack) {
    const { applicationId, event } = chirpstack;
    const apiKey = applications.get(applicationId);
    if (apiKey === undefined) return { unmapped: applicationId };
    return { apiKey, submission: { kind: 'chirpstack', event }, applicationId };
  }
  const topic = parsePublishTopic(topicName);
  if (!topic?.key) return {};
  const { kind, key, deviceName } = topic;
  return { apiKey: key, submission: { kind, ...(deviceName === undefined ? {} : { deviceName }) } };
}

/** The warnings of messages the bridge acknowledges without queueing; sampled, as they may come in floods. */
function dropWarnings(log: Logger) {
  return {
    unmapped: sampledWarning(
      log,
      'ChirpStack event of an application not in VIGIL_MQTT_BRIDGE_CHIRPSTACK dropped',
    ),
    refusedKey: sampledWarning(
      log,
      'ChirpStack event dropped: VIGIL_MQTT_BRIDGE_CHIRPSTACK maps its application to an unknown or revoked API key',
    ),
  };
}

/** Logs each ChirpStack application whose mapped key Vigil does not know, so a typo shows at start. */
async function checkMappedKeys(ingest: IngestService, applications: ChirpstackApplications, log: Logger) {
  for (const [applicationId, apiKey] of applications) {
    try {
      if ((await ingest.lookupKey(apiKey)) === null)
        log.error(
          { applicationId },
          'VIGIL_MQTT_BRIDGE_CHIRPSTACK maps this application to an unknown or revoked API key',
        );
    } catch (err) {
      log.warn({ err, applicationId }, 'the API key of a ChirpStack application could not be checked');
    }
  }
}

export async function startMqttBridge(deps: BridgeDeps): Promise<RunningBridge> {
  const { config } = deps;
  const url = config.mqttBridgeUrl;
  if (url === undefined) throw new Error('VIGIL_MQTT_BRIDGE_URL is not set');
  const ownsIngest = deps.ingest === undefined;
  const ingest = deps.ingest ?? createIngestService(deps);
  const log = deps.log.child({ component: 'mqtt-bridge' });
  const applications = config.mqttBridgeChirpstack;
  const filters = bridgeFilters(config.mqttBridgeGroup, config.mqttBridgeShared, applications.keys());
  const base = config.mqttBridgeClientId ?? `vigil-${config.mqttBridgeGroup}-${hostname()}`;
  const count = config.mqttBridgeShared ? config.mqttBridgeConnections : 1;
  const warn = dropWarnings(log);
  let closing = false;

  /** Queues one message, retrying while the failure is transient; false when the bridge stops first. */
  const deliver = async (packet: IPublishPacket, clientId: string): Promise<boolean> => {
    const route = routeOf(packet.topic, applications);
    if (!('apiKey' in route)) {
      if (route.unmapped !== undefined) warn.unmapped({ applicationId: route.unmapped });
      return true;
    }
    const body = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
    for (let delayMs = RETRY_MIN_MS; !closing; delayMs = Math.min(delayMs * 2, RETRY_MAX_MS)) {
      try {
        const key = await ingest.authenticate(route.apiKey, 'bridge', route.submission.kind);
        await ingest.accept({ ...route.submission, via: 'bridge', key, body, client: `bridge:${clientId}` });
        return true;
      } catch (err) {
        // A refusal no retry can fix (the catalogue's retryable: false) is acknowledged, not redelivered.
        if (isAppError(err) && !err.retryable) {
          if (err.code === 'INVALID_API_KEY' && route.applicationId !== undefined)
            warn.refusedKey({ applicationId: route.applicationId });
          return true;
        }
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
      protocolVersion: 5,
      // MQTT 5 ends a session when its connection does unless the CONNECT gives it an expiry.
      clean: false,
      properties: { sessionExpiryInterval: SESSION_EXPIRY_SECONDS },
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
  else
    log.info(
      {
        url: loggedUrl,
        connections: count,
        shared: config.mqttBridgeShared,
        chirpstackApplications: applications.size,
      },
      'bridge subscribed',
    );
  void checkMappedKeys(ingest, applications, log);

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
