/**
 * What the HTTP gateway, the MQTT broker and the bridge share: key check, rate limit, size and
 * body checks, backlog check and the durable micro-batched enqueue. One instance per process serves
 * every entry.
 */
import type { QueueKeys } from '../queue/queue-keys.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { IngestKeys } from './ingest-keys.ts';
import type { Config } from '../config/schema.ts';
import { AppError } from '../errors/app-error.ts';
import { PUBLIC_DEMO_REFUSALS, publicDemoKeyCheck } from '../config/public-demo.ts';
import { ERROR_CODES, type ErrorCode } from '../errors/catalogue.ts';
import type { Logger } from '../log/logger.ts';
import {
  isJsonGateway,
  isNetworkServer,
  ROUTING_KEY,
  type IngestGateway,
  type IngestItem,
} from '../domain/ingest-item.ts';
import { readNetworkMessage, type NetworkMessage, type NetworkServer } from '../domain/network-messages.ts';
import { createIngestProducer, routingKey, type IngestProducer } from '../queue/ingest-producer.ts';
import type { Redis } from '../redis/connect.ts';
import type { Registry } from 'prom-client';
import { createApiKeyResolver, type ApiKeyInfo } from './api-keys.ts';
import { createBacklogMonitor, type BacklogMonitor } from './backlog.ts';
import { createBatcher } from '../lib/batcher.ts';
import {
  checkDeviceSource,
  checkExternalDeviceName,
  decodeBody,
  deviceNameInBody,
  needsPreparserState,
  parseJsonBody,
  type Rejection,
} from './body.ts';
export type { Rejection };
import { createIngestId } from './ingest-id.ts';
import { createIngestLog, type IngestLog, type IngestLogRecord } from './ingest-log.ts';
import { createIngestMetrics, type IngestMetrics } from './metrics.ts';
import { createPreparserStates } from './preparser-state.ts';
import { createRateLimiter } from './rate-limiter.ts';

/** How a payload arrived; `bridge` items are queued with `via: 'mqtt'`. */
export type Entry = 'http' | 'mqtt' | 'bridge';

export interface Submission {
  kind: IngestGateway;
  via: Entry;
  key: ApiKeyInfo;
  body: Buffer;
  /** Device name given outside the body (`?deviceName=`, `raw/<KEY>/<device>`). */
  deviceName?: string;
  /** Client address or MQTT client id. */
  client: string;
  /** ChirpStack's event type (`?event=`, the MQTT topic's last level); network servers only. */
  event?: string;
}

/** A submission taken: queued, or (a network server's message that is not data) logged as ignored. */
export interface Accepted {
  id: string;
  ignored: boolean;
}

export interface IngestService {
  /** The key's record; AppError INVALID_API_KEY when unknown/revoked/absurd, UNAVAILABLE when Redis is down. */
  authenticate(apiKey: string, via: Entry, kind: IngestGateway | 'unknown'): Promise<ApiKeyInfo>;
  /**
   * Checks and durably queues one payload; resolves with its ingest id once it is in Redis. Throws
   * AppError with the refusal's code. Refusals that can never succeed are also written to the
   * environment's ingestion log.
   */
  submit(submission: Submission): Promise<string>;
  /**
   * `submit`, telling whether the payload was queued or, being a network server's message that is
   * not data (a join, a downlink event…), only logged as ignored.
   */
  accept(submission: Submission): Promise<Accepted>;
  /** The key's record or null, without counting anything (periodic re-checks of open connections). */
  lookupKey(apiKey: string): Promise<ApiKeyInfo | null>;
  /** Counts a refusal decided outside `submit` (an unknown key, a request that could not be read). */
  countRejected(via: Entry, kind: IngestGateway | 'unknown', code: ErrorCode): void;
  /**
   * Counts a refusal of a payload whose environment is known but that `submit` never saw (the HTTP
   * body parser stops at the size limit) and, for codes that no retry can fix, logs it.
   */
  recordRefusal(s: Omit<Submission, 'body' | 'client'>, rejection: Rejection): void;
  readonly ingestLog: IngestLog;
  readonly producer: IngestProducer;
  readonly backlog: BacklogMonitor;
  /** Stops accepting, writes pending batches, closes the queue. Safe to call twice. */
  close(): Promise<void>;
}

/** The settings the ingestion core reads. */
export type IngestConfig = Pick<
  Config,
  | 'queuePartitions'
  | 'credentialCacheMs'
  | 'rateLimitPerSecond'
  | 'demo'
  | 'ingestLogSize'
  | 'batchMaxPayloads'
  | 'batchMaxDelayMs'
  | 'ingestWriteTimeoutMs'
  | 'backlogHighWater'
  | 'backlogEnvHighWater'
  | 'backlogCheckMs'
  | 'bodyLimitBytes'
>;

export interface IngestDeps {
  config: IngestConfig;
  keys: TenancyKeys & QueueKeys & IngestKeys;
  /** Command connection (fails fast): key and pre-parser lookups, ingestion log. */
  redis: Redis;
  /** Connection of the ingest queue (the producer's XADDs). */
  queueConnection: Redis;
  log: Logger;
  metrics: Registry;
  /** Epoch ms of the per-key rate limits (Date.now by default); tests hold it still. */
  clock?: () => number;
}

const BACKLOG_RETRY_AFTER_SECONDS = 5;

/** What the gateway checks of a network server's message: JSON, the fields Vigil needs. */
function checkNetworkMessage(
  server: NetworkServer,
  event: string | undefined,
  body: string,
  bodyIsHex: boolean,
): Rejection | { network: NetworkMessage } {
  const parsed = parseJsonBody(body, bodyIsHex);
  if ('code' in parsed) return parsed;
  if (server === 'chirpstack' && (event === undefined || event === '')) {
    return {
      code: 'INVALID_NETWORK_MESSAGE',
      message:
        'ChirpStack events need their type: ?event= (the HTTP integration adds it), or the MQTT topic’s last level.',
    };
  }
  const network = readNetworkMessage(server, event, parsed.value);
  return 'problem' in network
    ? {
        code: 'INVALID_NETWORK_MESSAGE',
        message: `Not a ${NETWORK_SERVER_NAMES[server]} message: ${network.problem}.`,
      }
    : { network };
}

const NETWORK_SERVER_NAMES: Record<NetworkServer, string> = {
  tts: 'The Things Stack',
  chirpstack: 'ChirpStack',
};

export function createIngestService(deps: IngestDeps): IngestService {
  const { config, log } = deps;
  const metrics: IngestMetrics = createIngestMetrics(deps.metrics);
  const producer = createIngestProducer({ connection: deps.queueConnection, keys: deps.keys, config });
  const apiKeys = createApiKeyResolver({
    redis: deps.redis,
    keys: deps.keys,
    cacheMs: config.credentialCacheMs,
  });
  const preparsers = createPreparserStates({
    redis: deps.redis,
    keys: deps.keys,
    cacheMs: config.credentialCacheMs,
  });
  const limiter = createRateLimiter({ perSecond: config.rateLimitPerSecond, now: deps.clock });
  const isRefusedDemoKey = publicDemoKeyCheck(config.demo);
  const ingestLog = createIngestLog({ redis: deps.redis, keys: deps.keys, size: config.ingestLogSize });
  // One batcher for every partition (group commit): what arrives while a write is in flight goes
  // in the next one, split into one queue entry per partition in a single round trip.
  const batcher = createBatcher<IngestItem>({
    write: (items) => producer.add(items),
    maxItems: config.batchMaxPayloads,
    maxDelayMs: config.batchMaxDelayMs,
    timeoutMs: config.ingestWriteTimeoutMs,
    onBatchWritten: (size) => metrics.batchSize.observe(size),
  });
  const logBatcher = createBatcher<IngestLogRecord>({
    write: (entries) => ingestLog.record(entries),
    maxItems: 500,
    maxDelayMs: 10,
    timeoutMs: config.ingestWriteTimeoutMs,
  });
  const backlog = createBacklogMonitor({
    sampleQueue: () => producer.sampleBacklog(),
    averageBatchSize: () => producer.averagePayloadsPerEntry(),
    highWater: config.backlogHighWater,
    envHighWater: config.backlogEnvHighWater,
    intervalMs: config.backlogCheckMs,
    metrics,
    log,
  });

  const countRejected = (via: Entry, kind: IngestGateway | 'unknown', code: ErrorCode) =>
    metrics.rejected.inc({ via, gateway: kind, code });

  /** Writes what the gateway decided of a submission to its environment's ingestion log. */
  const logGatewayOutcome = (
    s: Pick<Submission, 'key' | 'kind'>,
    e: { id: string; receivedMs: number } & Pick<
      IngestLogRecord,
      'deviceName' | 'outcome' | 'code' | 'message'
    >,
  ): void => {
    logBatcher
      .submit({
        env: s.key.env,
        receivedMs: e.receivedMs,
        ingestId: e.id,
        gateway: s.kind,
        deviceName: e.deviceName,
        outcome: e.outcome,
        code: e.code,
        message: e.message,
      })
      .catch((err: unknown) => log.warn({ err, env: s.key.env }, 'ingestion log write failed'));
  };

  const recordRefusal = (
    s: Omit<Submission, 'body' | 'client'>,
    rejection: Rejection,
    id = createIngestId(),
    receivedMs = Date.now(),
  ): void => {
    countRejected(s.via, s.kind, rejection.code);
    // A payload that can never succeed as sent (retryable: false in the catalogue) is logged.
    if (!ERROR_CODES[rejection.code].retryable) {
      logGatewayOutcome(s, {
        id,
        receivedMs,
        deviceName: s.deviceName ?? null,
        outcome: 'rejected',
        ...rejection,
      });
    }
  };

  /**
   * The synchronous checks, in order: size, body, device name, pre-parser. Passed,
   * it gives the body's JSON value (JSON gateways), which routes the payload without a second parse.
   */
  const check = async (
    s: Submission,
    body: string,
    bodyIsHex: boolean,
  ): Promise<Rejection | { parsedBody?: { value: unknown }; network?: NetworkMessage }> => {
    if (s.body.length > config.bodyLimitBytes) {
      return { code: 'PAYLOAD_TOO_LARGE', message: `The body exceeds ${config.bodyLimitBytes} bytes.` };
    }
    if (isNetworkServer(s.kind)) return checkNetworkMessage(s.kind, s.event, body, bodyIsHex);
    let parsedBody: { value: unknown } | undefined;
    if (isJsonGateway(s.kind)) {
      const parsed = parseJsonBody(body, bodyIsHex);
      if ('code' in parsed) return parsed;
      parsedBody = parsed;
    }
    const badName = checkExternalDeviceName(s.deviceName);
    if (badName) return badName;
    const jsonValue = parsedBody?.value;
    const preparser = needsPreparserState(s.kind, jsonValue, s.deviceName)
      ? await preparsers.get(s.key.env)
      : undefined;
    return (
      checkDeviceSource(s.kind, jsonValue, s.deviceName, preparser) ?? (parsedBody ? { parsedBody } : {})
    );
  };

  /** Logs a network server's message that is not data: it is taken, and nothing more is done with it. */
  const recordIgnored = (s: Submission, message: NetworkMessage, id: string, receivedMs: number): void =>
    logGatewayOutcome(s, {
      id,
      receivedMs,
      deviceName: message.deviceId ?? null,
      outcome: 'ignored',
      code: null,
      message: `${message.kind === 'ignored' ? message.type : message.kind} message: not data`,
    });

  const accept = async (s: Submission): Promise<Accepted> => {
    const receivedMs = Date.now();
    const id = createIngestId(receivedMs);
    const waitSeconds = limiter.take(s.key.hash);
    if (waitSeconds > 0) {
      countRejected(s.via, s.kind, 'RATE_LIMITED');
      throw new AppError('RATE_LIMITED', 'Too many submissions for this API key.', {
        retryAfterSeconds: waitSeconds,
      });
    }
    const { body, bodyIsHex } =
      s.body.length > config.bodyLimitBytes ? { body: '', bodyIsHex: false } : decodeBody(s.body);
    const checked = await check(s, body, bodyIsHex);
    if ('code' in checked) {
      recordRefusal(s, checked, id, receivedMs);
      throw new AppError(checked.code, checked.message);
    }
    if (checked.network?.kind === 'ignored') {
      recordIgnored(s, checked.network, id, receivedMs);
      metrics.ignored.inc({ via: s.via, gateway: s.kind });
      return { id, ignored: true };
    }
    if (backlog.isFull(s.key.env)) {
      countRejected(s.via, s.kind, 'BACKLOG_FULL');
      throw new AppError('BACKLOG_FULL', 'The backlog of this environment is full; try again later.', {
        retryAfterSeconds: BACKLOG_RETRY_AFTER_SECONDS,
      });
    }
    const item: IngestItem = {
      id,
      env: s.key.env,
      gateway: s.kind,
      via: s.via === 'http' ? 'http' : 'mqtt',
      receivedMs,
      body,
      bodyIsHex,
      client: s.client,
      ...(s.deviceName === undefined ? {} : { deviceName: s.deviceName }),
    };
    if (checked.network) {
      // Routed by the network server's device id: the device's name in the usual case, so its
      // uplinks share a partition with its timers.
      item[ROUTING_KEY] = `${item.env}\n${checked.network.deviceId}`;
      if (s.event !== undefined) item.event = s.event;
      item.keyId = s.key.id;
    } else if (checked.parsedBody) {
      item[ROUTING_KEY] = routingKey(item, checked.parsedBody);
      const nameInBody = s.kind === 'submit' ? deviceNameInBody(checked.parsedBody.value) : undefined;
      if (nameInBody !== undefined) item.nameInBody = nameInBody;
    }
    try {
      await batcher.submit(item);
    } catch (err) {
      countRejected(s.via, s.kind, 'UNAVAILABLE');
      throw err;
    }
    metrics.accepted.inc({ via: s.via, gateway: s.kind });
    return { id, ignored: false };
  };

  let closing: Promise<void> | undefined;
  return {
    ingestLog,
    producer,
    backlog,
    countRejected,
    lookupKey: (apiKey) => (isRefusedDemoKey(apiKey) ? Promise.resolve(null) : apiKeys.resolve(apiKey)),
    recordRefusal: (s, rejection) => recordRefusal(s, rejection),
    async authenticate(apiKey, via, kind) {
      if (isRefusedDemoKey(apiKey)) {
        countRejected(via, kind, 'INVALID_API_KEY');
        throw new AppError('INVALID_API_KEY', PUBLIC_DEMO_REFUSALS.apiKey);
      }
      const key = await apiKeys.resolve(apiKey).catch((err: unknown) => {
        countRejected(via, kind, 'UNAVAILABLE');
        throw err;
      });
      if (key) return key;
      countRejected(via, kind, 'INVALID_API_KEY');
      throw new AppError('INVALID_API_KEY', 'The API key is unknown or revoked.');
    },
    accept,
    submit: async (s) => (await accept(s)).id,
    close() {
      closing ??= (async () => {
        backlog.close();
        await Promise.allSettled([batcher.close(), logBatcher.close()]);
      })();
      return closing;
    },
  };
}
