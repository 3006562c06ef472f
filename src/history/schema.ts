/**
 * Creates or updates Vigil's InfluxDB schema: the database, the two retention policies and the
 * continuous query that rolls raw values up into hourly buckets. Idempotent; every process may run it
 * at start (concurrent runs converge on the same state).
 */
import { parseDurationMs } from '../lib/duration.ts';
import { sha256Hex } from '../lib/sha256.ts';
import { InfluxError, type InfluxClient } from './influx-client.ts';
import { ident } from './influxql.ts';
import { LONG_RP, RAW_RP, READINGS, READINGS_HOURLY, ROLLUP_CQ_FOR, ROLLUP_CQ_PREFIX } from './layout.ts';

export interface HistorySchemaOptions {
  /** Raw values and contacts, InfluxDB duration (`30d`) or `INF`. */
  rawRetention: string;
  /** Hourly rollups and events, InfluxDB duration or `INF`. */
  rollupRetention: string;
  /** How often the rollup query recomputes the last 2 hours (`1m`). */
  resampleEvery: string;
}

/** A retention policy's duration (`INF` or `90d`, as configured) in ms; undefined for INF. */
export function retentionMs(duration: string): number | undefined {
  return duration === 'INF' ? undefined : parseDurationMs(duration);
}

/**
 * The rollup's SELECT: hourly count, total, max, min and avg of `value`, every tag kept. `into` adds
 * the INTO clause of the continuous query; `where` restricts a direct run (tests, backfills).
 */
export function rollupSelect(database: string, opts: { into?: boolean; where?: string } = {}): string {
  const db = ident(database);
  const into = opts.into ? ` INTO ${db}.${ident(LONG_RP)}.${ident(READINGS_HOURLY)}` : '';
  const where = opts.where ? ` WHERE ${opts.where}` : '';
  return (
    `SELECT count("value") AS "count", sum("value") AS "total", max("value") AS "max", ` +
    `min("value") AS "min", mean("value") AS "avg"${into} FROM ${db}.${ident(RAW_RP)}.${ident(READINGS)}` +
    `${where} GROUP BY time(1h), *`
  );
}

/** The CREATE statement of the rollup continuous query and its name (which carries a hash of it). */
export function rollupContinuousQuery(
  database: string,
  resampleEvery: string,
): { name: string; create: string } {
  const body =
    `RESAMPLE EVERY ${resampleEvery} FOR ${ROLLUP_CQ_FOR} ` +
    `BEGIN ${rollupSelect(database, { into: true })} END`;
  const name = ROLLUP_CQ_PREFIX + sha256Hex(body).slice(0, 12);
  return { name, create: `CREATE CONTINUOUS QUERY ${ident(name)} ON ${ident(database)} ${body}` };
}

/** Ensures database, retention policies and rollup query exist as configured. */
export async function ensureHistorySchema(influx: InfluxClient, opts: HistorySchemaOptions): Promise<void> {
  const db = influx.database;
  await influx.query(`CREATE DATABASE ${ident(db)}`, { database: null });
  await ensureRetentionPolicy(influx, RAW_RP, opts.rawRetention, true);
  await ensureRetentionPolicy(influx, LONG_RP, opts.rollupRetention, false);
  await ensureRollupQuery(influx, opts.resampleEvery);
}

async function ensureRetentionPolicy(
  influx: InfluxClient,
  name: string,
  duration: string,
  isDefault: boolean,
): Promise<void> {
  const db = ident(influx.database);
  const [series] = await influx.query(`SHOW RETENTION POLICIES ON ${db}`, { database: null });
  const exists = (series?.[0]?.values ?? []).some((row) => row[0] === name);
  const verb = exists ? 'ALTER' : 'CREATE';
  const replication = exists ? '' : ' REPLICATION 1';
  await influx.query(
    `${verb} RETENTION POLICY ${ident(name)} ON ${db} DURATION ${duration}${replication}${isDefault ? ' DEFAULT' : ''}`,
    { database: null },
  );
}

async function ensureRollupQuery(influx: InfluxClient, resampleEvery: string): Promise<void> {
  const db = influx.database;
  const wanted = rollupContinuousQuery(db, resampleEvery);
  const [series] = await influx.query('SHOW CONTINUOUS QUERIES', { database: null });
  const names = (series ?? [])
    .filter((s) => s.name === db)
    // A database without continuous queries comes back as a series without values.
    .flatMap((s) => (s.values as unknown[][] | undefined)?.map((row) => String(row[0])) ?? [])
    .filter((n) => n.startsWith(ROLLUP_CQ_PREFIX));
  for (const stale of names.filter((n) => n !== wanted.name)) {
    await influx.query(`DROP CONTINUOUS QUERY ${ident(stale)} ON ${ident(db)}`, { database: null });
  }
  if (names.includes(wanted.name)) return;
  try {
    await influx.query(wanted.create, { database: null });
  } catch (err) {
    // Another process created it between our SHOW and CREATE: same name, same text, same state.
    // InfluxDB tells this only in its message (no code), so the message is what is read.
    if (!(err instanceof InfluxError && /already exists/i.test(err.message))) throw err;
  }
}
