/**
 * The embedded MQTT broker (aedes): devices publish to topics that mirror the HTTP paths. The
 * payload is queued inside `authorizePublish` and its callback runs only once the batch is in
 * Redis, because aedes writes the QoS 1 PUBACK right after that callback. A payload that can never
 * be processed is acknowledged and recorded in the ingestion log; one that cannot be queued now
 * closes the connection without PUBACK, so the client sends it again after reconnecting.
 *
 * Every connection authenticates with an API key as its password, and everything it does is
 * confined to that key's environment: the keys in its topics, its subscriptions and its persistent
 * session. aedes keys sessions (stored subscriptions, queued messages, the takeover of a live
 * connection) by `client.id` alone, so once the key is known the broker renames the client to
 * `<env>/<client id>` (sessions.ts): the same client id in two environments is two sessions.
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
import { publicDemoKeyCheck } from '../config/public-demo.ts';
import type { Config } from '../config/schema.ts';
import { createIngestService, type IngestDeps, type IngestService } from '../ingest/ingest-service.ts';
import { listen } from '../lib/listen.ts';
import { createKeySweep } from './key-sweep.ts';
import { coalesceWrites } from './coalesce-writes.ts';
import { guardPacketSize, PACKET_OVERHEAD_BYTES } from './packet-size-guard.ts';
import { enterSession, type Session } from './sessions.ts';
import { parsePublishTopic, subscriptionKey } from './topics.ts';

export interface MqttDeps extends IngestDeps {
  config: IngestDeps['config'] & Pick<Config, 'mqttPort' | 'host'>;
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

/** CONNACK return codes of MQTT 3.1.1 (aedes 1.x speaks 3.1 and 3.1.1 only). */
const CONNACK_BAD_CREDENTIALS = 4 as AuthErrorCode;
const CONNACK_NOT_AUTHORIZED = 5 as AuthErrorCode;

const refusal = (message: string, returnCode: AuthErrorCode): AuthenticateError =>
  Object.assign(new Error(message), { returnCode });

export async function startMqttBroker(deps: MqttDeps): Promise<RunningMqttBroker> {
  const ownsIngest = deps.ingest === undefined;
  const ingest = deps.ingest ?? createIngestService(deps);
  const log = deps.log.child({ component: 'mqtt' });
  const isRefusedDemoKey = publicDemoKeyCheck(deps.config.demo);
  /** Every authenticated connection's key, environment and own client id. */
  const sessions = new WeakMap<Client, Session>();

  /**
   * The key of a publish: the topic's, which must be of the connection's environment, else the
   * password's (checked again on every publish, so a revocation reaches open connections within
   * the cache time).
   */
  const keyFor = async (
    session: Session,
    topicKey: string | undefined,
    kind: Parameters<IngestService['authenticate']>[2],
  ) => {
    const key = await ingest.authenticate(topicKey ?? session.apiKey, 'mqtt', kind);
    if (key.env === session.env) return key;
    ingest.countRejected('mqtt', kind, 'INVALID_API_KEY');
    throw new AppError('INVALID_API_KEY', 'The key in the topic is not of the connection’s environment.');
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
        ingest.countRejected('mqtt', 'unknown', 'INVALID_API_KEY');
        done(refusal('an API key is required as the password', CONNACK_NOT_AUTHORIZED), false);
        return;
      }
      const apiKey = password.toString('utf8');
      ingest.authenticate(apiKey, 'mqtt', 'unknown').then(
        (key) => {
          sessions.set(client, enterSession(client, apiKey, key.env));
          sweep.track(client, apiKey);
          done(null, true);
        },
        (err: unknown) => {
          if (isAppError(err) && err.code === 'INVALID_API_KEY') {
            // The demo's published key is a known key this installation does not allow.
            const code = isRefusedDemoKey(apiKey) ? CONNACK_NOT_AUTHORIZED : CONNACK_BAD_CREDENTIALS;
            done(refusal('API key refused', code), false);
            return;
          }
          // The key cannot be checked now (Redis unreachable): the connection is closed without a
          // CONNACK, which clients take as a network failure and retry. After a refusal, even
          // 3 (server unavailable), some stop for good (mqtt.js does, by default). aedes answers
          // nothing for a client closed before its authentication calls back.
          client.close();
          done(null, false);
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
    // Also called for the subscriptions a persistent session restores, with the restoring client.
    authorizeSubscribe(client, sub, callback) {
      void authorizeSubscription(client, sub).then(
        (ok) => callback(null, ok ? sub : null),
        () => callback(null, null),
      );
    },
    // Messages queued for a session are sent on reconnect whether or not its subscriptions were
    // authorized again: only those of a key granted to this connection go out.
    authorizeForward(client, packet) {
      const key = parsePublishTopic(packet.topic)?.key;
      return key !== undefined && sessions.get(client)?.grantedKeys.has(key) ? packet : null;
    },
  });

  /** Resolves undefined to acknowledge, or an Error to close the connection without PUBACK. */
  async function publish(client: Client, packet: PublishPacket): Promise<Error | undefined> {
    const session = sessions.get(client);
    if (!session) return new Error('publishing before the connection is authenticated');
    const topic = parsePublishTopic(packet.topic);
    if (!topic) return new Error('publishing to a topic that is not a gateway topic');
    try {
      const key = await keyFor(session, topic.key, topic.kind);
      const payload = typeof packet.payload === 'string' ? Buffer.from(packet.payload) : packet.payload;
      await ingest.submit({
        kind: topic.kind,
        via: 'mqtt',
        key,
        body: payload,
        client: session.clientId,
        ...(topic.deviceName === undefined ? {} : { deviceName: topic.deviceName }),
      });
      packet.retain = false;
      return undefined;
    } catch (err) {
      // A refusal no retry can fix is acknowledged (and logged), not redelivered; an invalid key
      // instead closes the connection.
      if (isAppError(err) && !err.retryable && err.code !== 'INVALID_API_KEY') {
        packet.retain = false;
        return undefined;
      }
      if (!isAppError(err)) log.error({ err }, 'mqtt publish fault');
      return err instanceof Error ? err : new Error(String(err));
    }
  }

  async function authorizeSubscription(client: Client, sub: Subscription): Promise<boolean> {
    const session = sessions.get(client);
    const key = subscriptionKey(sub.topic);
    if (session === undefined || key === undefined) return false;
    const info = await ingest.authenticate(key, 'mqtt', 'unknown');
    if (info.env !== session.env) return false;
    session.grantedKeys.add(key);
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
