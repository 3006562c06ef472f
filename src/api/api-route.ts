/**
 * What every read-API route shares: its attributes schema, its handler signature, the dependencies
 * handed to it and the answer envelope. A handler receives its attributes validated and typed, and
 * returns the envelope's `data`, or STREAMED when it wrote the response itself (the export).
 */
import type { AlertingKeys } from '../alerting/alerting-keys.ts';
import type { AuditKeys } from '../audit/audit-keys.ts';
import type { EventKeys } from '../events/event-keys.ts';
import type { IngestKeys } from '../ingest/ingest-keys.ts';
import type { StateKeys } from '../state/state-keys.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { ExportKeys } from './export-keys.ts';
import type { Request, Response } from 'express';
import type { Registry } from 'prom-client';
import type { Config } from '../config/schema.ts';
import type { Bucket } from '../history/last-24-hours.ts';
import type { ReaderItem } from '../history/last-24-hours-reader.ts';
import type { InfluxClient } from '../history/influx-client.ts';
import type { IngestLog } from '../ingest/ingest-log.ts';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { TrackedHashes } from '../redis/tracked-hashes.ts';
import type { TenancyStore } from '../tenancy/tenancy-store.ts';
import type { Scope, TokenRecord } from '../tenancy/types.ts';
import type { AttributesSchema } from './attributes.ts';

export interface ApiDeps {
  /** The settings the read API reads. */
  config: Pick<
    Config,
    | 'trustProxy'
    | 'credentialCacheMs'
    | 'auditRetentionDays'
    | 'exportLimitPerMonth'
    | 'ingestLogSize'
    | 'demo'
    | 'loginTokenTtlSeconds'
  >;
  keys: TenancyKeys & StateKeys & EventKeys & IngestKeys & ExportKeys & AlertingKeys & AuditKeys;
  redis: Redis;
  influx: InfluxClient;
  tenancy: TenancyStore;
  ingestLog: IngestLog;
  log: Logger;
  /**
   * The connection of the sensors endpoints' reads (redis/pipelined-reads.ts): auto-pipelined, and
   * without ioredis's timer per command, as those reads bound their own wait (one timer per call);
   * `redis` when absent.
   */
  reads?: Redis;
  /**
   * Routes served beside the read API's own, in its style (the management operations as POST
   * routes: src/management/management-routes.ts); absent: the read API alone.
   */
  moreRoutes?: readonly ApiRoute[];
  /**
   * Environments and definitions as this process keeps them until Redis says they changed
   * (redis/tracked-hashes.ts), for the sensors endpoints; read from `redis` every time when absent.
   */
  hashes?: Pick<TrackedHashes, 'hgetall'>;
  /** Where the API's request metrics are registered (the process registry). */
  metrics?: Registry;
  /** Epoch ms; Date.now by default. */
  clock?: () => number;
  /** last24Hours buckets; a createLast24HoursReader on `influx` (closed hours cached) by default. */
  last24Hours?: (env: string, items: ReaderItem[], nowMs: number) => Promise<Map<string, Bucket[]>>;
}

export interface ApiRequest<A = unknown> {
  /** The caller's environment (from the bearer token); '' on routes without a token. */
  env: string;
  /** The caller's token; null on routes without one. */
  token: TokenRecord | null;
  /** The request's attributes, as the route's schema gives them. */
  attrs: A;
  nowMs: number;
  /** Path parameters (`/login/:key` gives `key`), decoded. */
  params: Record<string, string>;
  /** The body as text, on routes with `rawBody` (their attributes come from the query string only). */
  body?: { text: string; contentType: string | undefined };
  /**
   * The request; `req.ip` is the client's address (the socket's peer, or X-Forwarded-For as far as
   * VIGIL_TRUST_PROXY allows).
   */
  req: Request;
  res: Response;
}

/** Marker: the handler has written the response itself. */
export const STREAMED = Symbol('streamed');

export interface ApiRoute<A = unknown> {
  /** Express paths; a `:name` segment is a path parameter. */
  paths: string[];
  /** Methods answered (GET and POST for every read endpoint). */
  methods: ('GET' | 'POST')[];
  /** Needs `Authorization: Bearer vt_…`. */
  auth: boolean;
  /**
   * What the token must be allowed (routes with `auth`): `read` for every read endpoint, `write`
   * for one that changes something. A token without it gets 403 FORBIDDEN.
   */
  scope: Scope;
  /**
   * The request attributes (attributes.ts): checked before `handle` runs, after the token, and
   * published as the endpoint's parameters in the OpenAPI document.
   */
  attributes: AttributesSchema<A>;
  /**
   * What the OpenAPI document says of the answer; routes of the read API leave it to openapi.ts,
   * the management operations bring their own.
   */
  answer?: RouteAnswer;
  /** The body is data, not attributes: read as text up to `limit` (an express size) and handed over. */
  rawBody?: { limit: string };
  handle(r: ApiRequest<A>): Promise<unknown>;
}

/** An answer as the OpenAPI document describes it. */
export interface RouteAnswer {
  summary: string;
  /** The envelope's `data`. */
  data: unknown;
  /** Error statuses beyond 400 and 503 (and 401 for routes that need a token). */
  errors: string[];
  /** Answered as `text/csv` instead of the envelope (the handler returns the text). */
  csv?: boolean;
  /** The request body's content types and schemas, for a route with `rawBody`. */
  body?: Record<string, unknown>;
}

/** A route whose handler is typed by its attributes schema. */
export const apiRoute = <A>(route: ApiRoute<A>): ApiRoute => route;

/** Removes repeated items, keeping the first occurrence's position. */
export function uniqueBy<T>(items: readonly T[], key: (item: T) => string): T[] {
  const seen = new Set<string>();
  return items.filter((item) => {
    const k = key(item);
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}
