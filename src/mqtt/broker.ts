/**
 * The embedded MQTT broker (aedes): devices publish to topics that mirror the HTTP paths. The
 * payload is queued inside `authorizePublish` and its callback runs only once the batch is in
 * Redis, because aedes writes the QoS 1 PUBACK right after that callback (NOTES.md). A payload that
 * can never be processed is acknowledged and recorded in the ingestion log; one that cannot be
 * queued now closes the connection without PUBACK, so the client sends it again after reconnecting.
 */
import type { Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import {
  Aedes,
  type AuthenticateError,
  type AuthErrorCode,
  type Client,
  type PublishPacket,
  type Subscription,
} from 'aedes';
import { AppError, isAppError } from '../errors/app-error.ts';
import { createIngestService, type IngestDeps, type IngestService } from '../ingest/ingest-service.ts';
import { listen } from '../ops/listen.ts';
import { createKeySweep } from './key-sweep.ts';
import { coalesceWrites } from './coalesce-writes.ts';
import { guardPacketSize, PACKET_OVERHEAD_BYTES } from './packet-size-guard.ts';
import { parsePublishTopic, subscriptionKey } from './topics.ts';

export interface MqttDeps extends IngestDeps {
  /** The process's shared ingestion core; created (and closed with the broker) when absent. */
  ingest?: IngestService;
}

export interface RunningMqttBroker {
  port: number;
  /** Stops listening, disconnects clients, then closes what it created. Safe to call twice. */
  close(): Promise<void>;
}

/** Shortest interval between re-checks of the keys of open connections, in ms. */
const KEY_SWEEP_MIN_MS = 500;

const CONNACK_BAD_CREDENTIALS = 4 as AuthErrorCode;
const CONNACK_SERVER_UNAVAILABLE = 3 as AuthErrorCode;

export async function startMqttBroker(deps: MqttDeps): Promise<RunningMqttBroker> {
  const ownsIngest = deps.ingest === undefined;
  const ingest = deps.ingest ?? createIngestService(deps);
  const log = deps.log.child({ component: 'mqtt' });
  /**
   * Clients that gave an API key as their password: the key (checked again on every publish, so a
   * revocation reaches open connections within the cache time) and its environment at connect.
   */
  const passwordKeys = new WeakMap<Client, { apiKey: string; env: string }>();

  const keyFor = async (
    client: Client,
    topicKey: string | undefined,
    kind: Parameters<IngestService['authenticate']>[2],
  ) => {
    if (topicKey !== undefined) return ingest.authenticate(topicKey, 'mqtt', kind);
    const known = passwordKeys.get(client);
    if (known) return ingest.authenticate(known.apiKey, 'mqtt', kind);
    ingest.countRejected('mqtt', kind, 'INVALID_API_KEY');
    throw new AppError('INVALID_API_KEY', 'No API key in the topic and none as the password.');
  };

  const sweep = createKeySweep({
    intervalMs: Math.max(KEY_SWEEP_MIN_MS, deps.config.credentialCacheMs),
    isValid: (apiKey) =>
      ingest.lookupKey(apiKey).then(
        (info) => info !== null,
        () => undefined,
      ),
  });

  const broker = await Aedes.createBroker({
    maxClientsIdLength: 128,
    authenticate(client, _username, password, done) {
      if (password === undefined || password.length === 0) {
        done(null, true);
        return;
      }
      const apiKey = password.toString('utf8');
      ingest.authenticate(apiKey, 'mqtt', 'unknown').then(
        (key) => {
          passwordKeys.set(client, { apiKey, env: key.env });
          sweep.track(client, apiKey);
          done(null, true);
        },
        (err: unknown) => {
          const refused = new Error('API key refused') as AuthenticateError;
          refused.returnCode =
            isAppError(err) && err.code === 'INVALID_API_KEY'
              ? CONNACK_BAD_CREDENTIALS
              : CONNACK_SERVER_UNAVAILABLE;
          done(refused, false);
        },
      );
    },
    authorizePublish(client, packet, callback) {
      if (client === null) {
        callback(new Error('a will of a client that is gone is not ingested'));
        return;
      }
      void publish(client, packet).then(callback, callback);
    },
    authorizeSubscribe(client, sub, callback) {
      void authorizeSubscription(client, sub).then(
        (ok) => callback(null, ok ? sub : null),
        () => callback(null, null),
      );
    },
  });

  /** Resolves undefined to acknowledge, or an Error to close the connection without PUBACK. */
  async function publish(client: Client, packet: PublishPacket): Promise<Error | undefined> {
    const topic = parsePublishTopic(packet.topic);
    if (!topic) return new Error('publishing to a topic that is not a gateway topic');
    try {
      const key = await keyFor(client, topic.key, topic.kind);
      const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
      await ingest.submit({
        kind: topic.kind,
        via: 'mqtt',
        key,
        body: payload,
        client: client.id,
        ...(topic.deviceName === undefined ? {} : { deviceName: topic.deviceName }),
      });
      packet.retain = false;
      return undefined;
    } catch (err) {
      // A refusal no retry can fix is acknowledged (and logged), not redelivered; an invalid key
      // instead closes the connection (PRODUCT.md §7).
      if (isAppError(err) && !err.retryable && err.code !== 'INVALID_API_KEY') {
        packet.retain = false;
        return undefined;
      }
      if (!isAppError(err)) log.error({ err }, 'mqtt publish fault');
      return err instanceof Error ? err : new Error(String(err));
    }
  }

  async function authorizeSubscription(client: Client, sub: Subscription): Promise<boolean> {
    const key = subscriptionKey(sub.topic);
    if (key === undefined) return false;
    const info = await ingest.authenticate(key, 'mqtt', 'unknown');
    const own = passwordKeys.get(client);
    if (own !== undefined && own.env !== info.env) return false;
    sweep.track(client, key);
    return true;
  }

  broker.on('clientDisconnect', (client) => sweep.forget(client));
  // Reasons only: topics and passwords can carry API keys, so they are never logged.
  broker.on('clientError', (client, err) =>
    log.debug({ clientId: client.id, reason: err.message }, 'client dropped'),
  );

  const maxPacketBytes = deps.config.bodyLimitBytes + PACKET_OVERHEAD_BYTES;
  const server: Server = createServer((socket) => {
    guardPacketSize(socket, maxPacketBytes);
    coalesceWrites(socket);
    broker.handle(socket);
  });
  let port: number;
  try {
    // listen() only uses what net.Server and http.Server share (listen, address, events).
    port = await listen(server as HttpServer, deps.config.mqttPort, deps.config.host, 'VIGIL_MQTT_PORT');
  } catch (err) {
    await new Promise<void>((resolve) => broker.close(() => resolve()));
    if (ownsIngest) await ingest.close();
    throw err;
  }
  log.debug({ port }, 'MQTT broker listening');

  let closing: Promise<void> | undefined;
  return {
    port,
    close() {
      closing ??= (async () => {
        sweep.close();
        const stopped = new Promise<void>((resolve) => server.close(() => resolve()));
        await new Promise<void>((resolve) => broker.close(() => resolve()));
        await stopped;
        if (ownsIngest) await ingest.close();
      })();
      return closing;
    },
  };
}
