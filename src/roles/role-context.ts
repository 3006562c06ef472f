/**
 * What main.ts hands each role it starts: the configuration, the process's shared adapters, where
 * Redis connections come from, and the lifecycle each role registers its stop steps in.
 */
import type { Registry } from 'prom-client';
import type { Config } from '../config/schema.ts';
import type { HistoryWriter } from '../history/history-writer.ts';
import type { InfluxClient } from '../history/influx-client.ts';
import type { IngestLog } from '../ingest/ingest-log.ts';
import type { Keys } from '../keys.ts';
import type { Lifecycle } from '../lib/lifecycle.ts';
import type { Logger } from '../log/logger.ts';
import type { Redis } from '../redis/connect.ts';
import type { Connections } from '../redis/connections.ts';
import type { StateStore } from '../state/state-store.ts';
import type { Catalog } from '../tenancy/catalog.ts';
import type { TenancyStore } from '../tenancy/tenancy-store.ts';
import type { ProcessItems } from '../worker/ingest-processor.ts';

/** What a test or the bench may change of the roles; production passes nothing. */
export interface StartOptions {
  /** Wraps the worker's processing of each step (e.g. to crash on a marked payload). */
  wrapProcess?: (process: ProcessItems) => ProcessItems;
  /**
   * The clock of the worker's steps and of the scheduler's timers and availability checks (epoch
   * ms): tests of conditions that wait move it instead of waiting.
   */
  clock?: () => number;
  /**
   * false: the worker records no late values (history versions, late hours), so that the bench can
   * measure what that bookkeeping costs when no value is late (`npm run bench -- --only
   * late-writes`). Not a setting: without it, late values would leave last24Hours and the hourly
   * rollups inexact, which no installation should choose.
   */
  lateWrites?: boolean;
}

/** What every role starts from. */
export interface RoleContext {
  config: Config;
  log: Logger;
  metrics: Registry;
  connections: Connections;
  /** The process's shared command connection. */
  redis: Redis;
  keys: Keys;
  influx: InfluxClient;
  tenancy: TenancyStore;
  ingestLog: IngestLog;
  catalog: Catalog;
  state: StateStore;
  history: HistoryWriter;
  /** Each part a role starts registers its stop here as it starts. */
  lifecycle: Lifecycle;
  options: StartOptions;
}
