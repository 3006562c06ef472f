/** What every scenario gets: options, the private Redis/InfluxDB, the report, a progress logger. */
import { Redis as IORedis } from 'ioredis';
import type { BenchOptions } from './options.ts';
import type { Report } from './report.ts';
import { LAG_PROBE_DEVICES } from './lag-probe.ts';
import {
  provisionBench,
  type BenchDefinition,
  type Provisioned,
  type ProvisionOptions,
} from './provision.ts';
import { startVigilProcess, type HostOptions, type Settings, type VigilProcess } from './vigil-process.ts';

export interface BenchContext {
  opts: BenchOptions;
  redisUrl: string;
  influxUrl: string;
  report: Report;
  /** Process ids of the private Redis and InfluxDB (CPU accounting). */
  pids: { redis: number; influx: number };
  log(message: string): void;
}

/** MQTT load shape used by every MQTT scenario and the aedes ceiling. */
export const MQTT_CONNECTIONS = 4;
export const MQTT_WINDOW = 250;
/** HTTP gateway load shape (the issue: 50 connections). */
export const HTTP_CONNECTIONS = 50;

let instance = 0;

export interface BenchVigil {
  vigil: VigilProcess;
  settings: Settings & { keyPrefix: string; influxDatabase: string };
  provisioned: Provisioned;
}

/**
 * Empties Redis, provisions a fresh bench environment under a new key prefix and InfluxDB database,
 * and starts a Vigil process with `roles`.
 */
export async function startBenchVigil(
  ctx: BenchContext,
  roles: string,
  extra: Settings = {},
  label = roles.replace(/,/g, '+'),
  host?: HostOptions,
  /**
   * The bench environment's definition and devices: by default the bench definition, its rules
   * waiting with `--conditions`, and `--devices` devices.
   */
  provision: ProvisionOptions & { devices?: number } = {},
): Promise<BenchVigil> {
  const flush = new IORedis(ctx.redisUrl);
  await flush.flushall();
  flush.disconnect();
  // The databases of earlier scenarios go too: influxd compacts what they wrote for minutes, and
  // that CPU would be charged to this scenario (it doubled influxd's CPU per read request).
  for (let earlier = 1; earlier <= instance; earlier++)
    await influxQuery(ctx.influxUrl, `DROP DATABASE bench${earlier}`);
  instance++;
  const settings = {
    redisUrl: ctx.redisUrl,
    influxUrl: ctx.influxUrl,
    host: '127.0.0.1',
    apiPort: 0,
    gatewayPort: 0,
    mqttPort: 0,
    opsPort: 0,
    logLevel: 'warn',
    roles,
    // The accept scenarios run without workers: the backlog grows by millions, and the gateway's
    // 503s (whole or per environment) would be counted against the entry's rate.
    backlogHighWater: 50_000_000,
    backlogEnvHighWater: 0,
    ...extra,
    // An explicit --set wins over a scenario's own settings (flood control raised for alerting…).
    ...ctx.opts.settings,
    keyPrefix: `bench${instance}`,
    influxDatabase: `bench${instance}`,
  };
  const { devices = ctx.opts.devices, conditions = ctx.opts.conditions, definition } = provision;
  const provisioned = await provisionBench(ctx.redisUrl, settings.keyPrefix, devices + LAG_PROBE_DEVICES, {
    conditions,
    definition,
  });
  const vigil = await startVigilProcess(settings, {
    profile: ctx.opts.profile,
    label,
    ...(host ? { host } : {}),
  });
  return { vigil, settings, provisioned };
}

/** A bench Vigil laid out as the end-to-end scenario runs it, with the process of its worker. */
export interface EndToEndVigil extends BenchVigil {
  /** The worker's process: a second one, or with --single the entry's. */
  worker: VigilProcess;
  /** Every process whose CPU a window counts, the bench's load generators included. */
  cpuPids: Record<string, number>;
  stop(): Promise<void>;
}

/**
 * The entry roles (gateway, mqtt, scheduler, api and `extraRoles`) in one Vigil process and the
 * worker in a second, as a 2-core deployment runs them (`--single`: all in one process).
 */
export async function startEndToEndVigil(
  ctx: BenchContext,
  o: {
    label: string;
    extraRoles?: string;
    settings?: Settings;
    host?: HostOptions;
    conditions?: boolean;
    /** Another definition of the bench devices than the usual one. */
    definition?: BenchDefinition;
    /** Devices of the bench environment; default `--devices`. */
    devices?: number;
  },
): Promise<EndToEndVigil> {
  const { split, profile } = ctx.opts;
  const entry = ['gateway', 'mqtt', ...(split ? [] : ['worker']), 'scheduler', 'api'];
  if (o.extraRoles) entry.push(o.extraRoles);
  const { conditions, definition, devices } = o;
  const bv = await startBenchVigil(ctx, entry.join(','), o.settings ?? {}, o.label, o.host, {
    conditions,
    definition,
    devices,
  });
  let worker = bv.vigil;
  if (split) {
    try {
      worker = await startVigilProcess(
        { ...bv.settings, roles: 'worker' },
        { profile, label: `${o.label}-worker`, ...(o.host ? { host: o.host } : {}) },
      );
    } catch (err) {
      await bv.vigil.stop();
      throw err;
    }
  }
  return {
    ...bv,
    worker,
    cpuPids: {
      vigil: bv.vigil.pid,
      ...(split ? { worker: worker.pid } : {}),
      ...ctx.pids,
      bench: process.pid,
    },
    stop: async () => {
      await Promise.all([bv.vigil.stop(), worker.stop()]);
    },
  };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function influxQuery(url: string, q: string): Promise<void> {
  const res = await fetch(`${url}/query`, { method: 'POST', body: new URLSearchParams({ q }) });
  if (!res.ok) throw new Error(`InfluxDB ${q}: HTTP ${res.status} ${await res.text()}`);
  await res.arrayBuffer();
}
