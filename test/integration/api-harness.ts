/**
 * A read API on a real port against the integration run's Redis and InfluxDB, with a seeded
 * environment in the shape of the demo (ComfortSensors, device_1_hallway…). State is written in the
 * fixed layout the worker writes (Keys.deviceState / events sorted sets), history with the history
 * writer, so each test controls exact values and times.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { onTestFinished } from 'vitest';
import { createApiApp, type ApiDeps } from '../../src/api/api-app.ts';
import { createConsole } from '../../src/console/console-app.ts';
import type { Config } from '../../src/config/schema.ts';
import { DATA_TYPE_INFO } from '../../src/domain/data-types.ts';
import type { DataPointSpec, DataValue, DefinitionSpec, EventRecord } from '../../src/domain/types.ts';
import { createHistoryWriter, type ValuePoint } from '../../src/history/history-writer.ts';
import { createInfluxClient, type InfluxClient } from '../../src/history/influx-client.ts';
import { ensureHistorySchema } from '../../src/history/schema.ts';
import { createIngestLog, type IngestLog } from '../../src/ingest/ingest-log.ts';
import { createLogger } from '../../src/log/logger.ts';
import { closeRedis, connectRedis, type Redis } from '../../src/redis/connect.ts';
import { adminDeps, createKeys, type Keys } from '../../src/keys.ts';
import { encodePoint } from '../../src/state/point-record.ts';
import { createTenancyAdmin, type TenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import { loginLimitsOf } from '../../src/tenancy/login.ts';
import { createTenancyStore } from '../../src/tenancy/tenancy-store.ts';
import { testConfig } from '../support/context.ts';

const dp = (name: string, dataType: DataPointSpec['dataType'], displayName = name): DataPointSpec => ({
  name,
  displayName,
  dataType,
  hysteresis: 0,
  thresholds: [],
});

/** The demo's ComfortSensors definition (config/provisioning/demo). */
export const COMFORT_SENSORS: DefinitionSpec = {
  name: 'ComfortSensors',
  manufacturer: 'Acme',
  version: '1.2',
  dataPoints: [
    dp('Temperature', 'temperature'),
    dp('Humidity', 'humidity'),
    dp('Illuminance', 'illuminance'),
    dp('Battery', 'millivolts', 'Battery millivolts'),
    dp('CO2', 'co2'),
    dp('Occupancy', 'occupancy'),
  ],
};

export const PARSER = 'function parsePayload(payloadStr) { return JSON.parse(payloadStr); }';

export interface ApiHarness {
  config: Config;
  redis: Redis;
  keys: Keys;
  influx: InfluxClient;
  admin: TenancyAdmin;
  ingestLog: IngestLog;
  baseUrl: string;
  /** Starts one more API app on the same Redis with other dependencies (e.g. a dead InfluxDB). */
  startApp(overrides?: Partial<ApiDeps>): Promise<string>;
  /** Environment with ComfortSensors, the three demo devices and a CLI token. */
  seedEnvironment(env: string): Promise<{ token: string; apiKey: string }>;
  /** Writes data point state in the worker's layout. */
  setState(env: string, device: string, sensor: string, s: SeedState): Promise<void>;
  setContact(env: string, device: string, ms: number): Promise<void>;
  addEvent(e: Omit<EventRecord, 'id' | 'env'> & { env: string }): Promise<void>;
  /** Writes history values; of the data point's ComfortSensors type unless `dataType` says. */
  writeHistory(
    env: string,
    device: string,
    sensor: string,
    values: { timeMs: number; value: DataValue }[],
    dataType?: DataPointSpec['dataType'],
  ): Promise<void>;
}

export interface SeedState {
  value: DataValue;
  updatedMs: number;
  status?: string;
  lastSuccessMs?: number;
  statusSinceMs?: number;
}

/** Registers a cleanup: onTestFinished inside a test, or a collector run by afterAll. */
export type Defer = (fn: () => unknown) => void;

export async function startApiHarness(
  overrides: Partial<Record<keyof Config, string | number | boolean>> = {},
  defer: Defer = (fn) => onTestFinished(async () => void (await fn())),
): Promise<ApiHarness> {
  const config = testConfig(overrides);
  const redis = connectRedis(config.redisUrl, 'command', 'api-test');
  defer(() => closeRedis(redis));
  const keys = createKeys(config.keyPrefix);
  const influx = createInfluxClient({ url: config.influxUrl, database: config.influxDatabase });
  await ensureHistorySchema(influx, {
    rawRetention: config.rawRetention,
    rollupRetention: config.rollupRetention,
    resampleEvery: config.rollupResampleEvery,
  });
  const log = createLogger('silent');
  const tenancy = createTenancyStore({
    redis,
    keys,
    login: loginLimitsOf(config),
  });
  const admin = createTenancyAdmin(adminDeps(redis, keys));
  const ingestLog = createIngestLog({ redis, keys, size: config.ingestLogSize });
  const writer = createHistoryWriter({ influx, log });
  const base: ApiDeps = { config, keys, redis, influx, tenancy, ingestLog, log };

  async function startApp(more: Partial<ApiDeps> = {}): Promise<string> {
    // The api role serves the web console beside the JSON API, as in production.
    const webConsole = createConsole({ ...base, config, keys });
    defer(() => webConsole.close());
    const server: Server = createServer(createApiApp({ ...base, ...more }, [webConsole.router]));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    defer(
      () =>
        new Promise<void>((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    );
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const dataTypeOf = (sensor: string) =>
    COMFORT_SENSORS.dataPoints.find((p) => p.name === sensor)?.dataType ?? 'number';

  return {
    config,
    redis,
    keys,
    influx,
    admin,
    ingestLog,
    baseUrl: await startApp(),
    startApp,
    async seedEnvironment(env) {
      await admin.createEnvironment(env, 'en');
      await admin.applyDefinition({ kind: 'private', env }, COMFORT_SENSORS, PARSER);
      const devices = [
        ['device_2_rd_office', 'Open-plan R&D Office'],
        ['device_1_hallway', 'Hallway'],
        ['device_3_reception', 'Reception'],
      ];
      for (const [name, displayName] of devices) {
        await admin.createDevice(env, {
          name: name!,
          displayName: displayName!,
          definitionName: 'ComfortSensors',
          definitionIsPublic: false,
        });
      }
      const { token } = await admin.createToken(env, 'test', 0);
      const { key } = await admin.createApiKey(env);
      return { token, apiKey: key };
    },
    async setState(env, device, sensor, s) {
      const status = s.status ?? 'SUCCESS';
      const packed = encodePoint({
        updatedMs: s.updatedMs,
        offsetNs: 0,
        rule: -1,
        rulesId: '',
        status,
        statusSinceMs: s.statusSinceMs ?? s.updatedMs,
        lastSuccessMs: s.lastSuccessMs ?? (status === 'SUCCESS' ? s.updatedMs : null),
        hour: null,
        receivedMs: null,
        held: [],
        shownValue: '',
      });
      await redis.hset(keys.deviceState(env, device), {
        [`${sensor}|v`]: JSON.stringify(s.value),
        [`${sensor}|p`]: packed,
      });
    },
    async setContact(env, device, ms) {
      await redis.hset(keys.deviceState(env, device), '@lc', String(ms));
    },
    async addEvent(e) {
      const json = JSON.stringify({ id: `${e.deviceName}/${e.receivedMs}/${Math.random()}`, ...e });
      await redis.zadd(keys.envEvents(e.env), e.receivedMs, json);
      await redis.zadd(keys.deviceEvents(e.env, e.deviceName), e.receivedMs, json);
    },
    async writeHistory(env, device, sensor, values, type) {
      const dataType = type ?? dataTypeOf(sensor);
      const points: ValuePoint[] = values.map((v) => ({
        env,
        device,
        sensor,
        sensorType: DATA_TYPE_INFO[dataType].sensorType,
        dataType,
        timeMs: v.timeMs,
        offsetNs: 0,
        value: v.value,
        status: 'SUCCESS',
      }));
      for (let i = 0; i < points.length; i += 5000) {
        await writer.write({ values: points.slice(i, i + 5000), events: [], contacts: [] });
      }
    },
  };
}

export interface CallOptions {
  method?: 'GET' | 'POST' | 'PUT';
  token?: string;
  /** Sent as JSON text (with a form Content-Type unless `contentType` says otherwise). */
  body?: unknown;
  contentType?: string;
  /** Appended after `?` as given. */
  query?: string;
  headers?: Record<string, string>;
}

export interface CallResult {
  status: number;
  headers: Headers;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  json: any;
}

export async function call(baseUrl: string, path: string, opts: CallOptions = {}): Promise<CallResult> {
  const headers: Record<string, string> = { ...opts.headers };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  let body: string | undefined;
  if (opts.body !== undefined) {
    body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
    headers['content-type'] = opts.contentType ?? 'application/x-www-form-urlencoded';
  }
  const url = `${baseUrl}${path}${opts.query === undefined ? '' : `?${opts.query}`}`;
  const res = await fetch(url, {
    method: opts.method ?? (body === undefined ? 'GET' : 'POST'),
    headers,
    body,
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}
