/**
 * What the web console is made of, apart from the app that puts it together (console-app.ts): its
 * dependencies, and the context its route files share.
 */
import type { Request, Response } from 'express';
import type { Alarms } from '../alerting/alarms.ts';
import type { Config } from '../config/schema.ts';
import type { Last24HoursReader } from '../history/last-24-hours-reader.ts';
import type { InfluxClient } from '../history/influx-client.ts';
import type { IngestLog } from '../ingest/ingest-log.ts';
import type { Keys } from '../keys.ts';
import type { Logger } from '../log/logger.ts';
import type { Management } from '../management/management.ts';
import type { Redis } from '../redis/connect.ts';
import type { TenancyStore } from '../tenancy/tenancy-store.ts';
import type { Assets } from './assets.ts';
import type { LiveHub } from './live.ts';
import type { CookiePolicy } from './security.ts';
import type { ConsoleSession, SessionStore } from './sessions.ts';
import type { PageOptions } from './views/layout.ts';
import type { Workbench } from './workbench.ts';

/** The settings the console reads. */
export type ConsoleConfig = Pick<
  Config,
  | 'auditRetentionDays'
  | 'consoleLiveMs'
  | 'consoleSessionIdleMinutes'
  | 'consoleSessionMaxHours'
  | 'consoleSignInPerMinute'
  | 'credentialCacheMs'
  | 'ingestLogSize'
  | 'publicUrl'
  | 'sandboxIsolateIdleMs'
  | 'sandboxMaxIsolates'
  | 'sandboxMemoryMb'
  | 'sandboxTimeoutMs'
  | 'workbenchRunsPerMinutePerEnv'
  | 'workbenchRunsPerMinutePerSession'
>;

export interface ConsoleDeps {
  config: ConsoleConfig;
  keys: Keys;
  redis: Redis;
  influx: InfluxClient;
  tenancy: TenancyStore;
  ingestLog: IngestLog;
  log: Logger;
  /** The management operations the console's forms run (the API's own). */
  management?: Management;
  clock?: () => number;
}

/** What the console's routes share. */
export interface ConsoleContext {
  deps: ConsoleDeps;
  clock: () => number;
  sessions: SessionStore;
  cookies: CookiePolicy;
  live: LiveHub;
  /** Open alarms and their acknowledgement (alerting's). */
  alarms: Alarms;
  workbench: Workbench;
  assets: Assets;
  /** last24Hours buckets (closed hours cached) for the device charts. */
  last24Hours: Last24HoursReader;
  /** Sends a page. */
  render(res: Response, status: number, o: Omit<PageOptions, 'assets'>): void;
  /** The request's session, or null. */
  sessionOf(req: Request, opts?: { renew?: boolean }): Promise<ConsoleSession | null>;
  /** The request's session; otherwise a GET is sent to sign-in and a POST refused (UNAUTHORIZED). */
  requireSession(req: Request, res: Response): Promise<ConsoleSession | null>;
  /** The request's query parameters (the API app leaves the query unparsed). */
  queryOf(req: Request): URLSearchParams;
}
