/**
 * The `worker` role: the InfluxDB schema, the parser sandbox, the event outbox's InfluxDB writer,
 * the recent-payload writer and the worker's step loops, put together and registered to stop in
 * reverse: the step loops first, then what their last steps handed on.
 */
import type { Config } from '../config/schema.ts';
import { startOutboxDrainer } from '../events/outbox-drainer.ts';
import type { InfluxClient } from '../history/influx-client.ts';
import { ensureHistorySchema, retentionMs } from '../history/schema.ts';
import { parseDurationMs } from '../lib/duration.ts';
import type { Logger } from '../log/logger.ts';
import {
  startRecentPayloadWriter,
  type RecentPayloadWriter,
} from '../recent-payloads/recent-payload-writer.ts';
import { dependentData } from '../keys.ts';
import { createSandbox, type Sandbox } from '../sandbox/sandbox.ts';
import { createAutoDevices } from '../tenancy/auto-devices.ts';
import { createCatalog } from '../tenancy/catalog.ts';
import { registerSandboxMetrics } from '../sandbox/sandbox-metrics.ts';
import { createIngestProcessor, type ProcessItems } from '../worker/ingest-processor.ts';
import { createLateWrites } from '../worker/late-writes.ts';
import { deadLetterOutcomes } from '../worker/outcomes.ts';
import { fairParsers } from '../worker/parser-fairness.ts';
import { startWorker } from '../worker/start-worker.ts';
import type { RoleContext } from './role-context.ts';

/** How long a failed attempt to create the InfluxDB schema waits before the next, in ms. */
const SCHEMA_RETRY_MS = 5000;

/** Starts the worker role's parts, each registered to stop in `ctx.lifecycle`. */
export async function startWorkerRole(ctx: RoleContext): Promise<void> {
  const { config, connections, keys, log, metrics, lifecycle } = ctx;
  const schema = keepEnsuringSchema(ctx.influx, config, log);
  lifecycle.add('influx schema', schema.close);
  // Steps started before the retention policies exist fail their history writes and are
  // retried: with InfluxDB up, start after the schema is in place.
  await schema.firstAttempt;
  const sandbox = startSandbox(ctx);
  const drainer = startOutboxDrainer({
    connections,
    keys,
    history: ctx.history,
    log,
    consumer: `${process.pid}-${Date.now()}`,
    maxEntries: config.eventOutboxMaxEntries,
  });
  lifecycle.add('event outbox', () => drainer.close());
  // Stopped after the worker: what its last steps kept is written.
  const recentWriter = startRecentPayloadWriter({
    redis: ctx.redis,
    keys,
    count: config.deviceRecentPayloads,
    log,
  });
  lifecycle.add('recent payloads', () => recentWriter.close());
  const processItems = processing(ctx, sandbox, recentWriter);
  const worker = await startWorker({
    config,
    connections,
    keys,
    log,
    metrics,
    process: ctx.options.wrapProcess ? ctx.options.wrapProcess(processItems) : processItems,
    deadLetterLog: (items) => ctx.ingestLog.commands(deadLetterOutcomes(items)),
  });
  lifecycle.add('worker', () => worker.close());
}

/** The worker's parser sandbox, its metrics registered. */
function startSandbox({ config, log, metrics, lifecycle }: RoleContext): Sandbox {
  const sandbox = createSandbox({
    timeoutMs: config.sandboxTimeoutMs,
    memoryLimitMb: config.sandboxMemoryMb,
    maxIsolates: config.sandboxMaxIsolates,
    isolateIdleMs: config.sandboxIsolateIdleMs,
    log,
  });
  registerSandboxMetrics(metrics, sandbox);
  lifecycle.add('sandbox', () => sandbox.close());
  return sandbox;
}

/** What a worker step does with the payloads it took. */
function processing(ctx: RoleContext, sandbox: Sandbox, recentWriter: RecentPayloadWriter): ProcessItems {
  const { config, keys, log, options } = ctx;
  const autoDevices = createAutoDevices({
    redis: ctx.redis,
    keys,
    dependents: dependentData(keys),
    auditRetentionMs: config.auditRetentionDays * 86_400_000,
    ...(options.clock ? { clock: options.clock } : {}),
  });
  // The worker reads the catalog epochs every step, so it may keep what it read far longer than
  // the roles that do not.
  const catalog =
    config.workerCatalogCacheMs === config.catalogCacheMs
      ? ctx.catalog
      : createCatalog({ tenancy: ctx.tenancy, ttlMs: config.workerCatalogCacheMs });
  return createIngestProcessor({
    ...fairParsers(sandbox, config, ctx.metrics, log),
    catalog,
    sandbox,
    state: ctx.state,
    history: ctx.history,
    ingestLog: ctx.ingestLog,
    log,
    defaultAvailabilityMinutes: config.defaultAvailabilityMinutes,
    recentPayloads: { keys, count: config.deviceRecentPayloads, writer: recentWriter },
    rawRetentionMs: retentionMs(config.rawRetention),
    ...(options.lateWrites === false
      ? {}
      : { lateWrites: createLateWrites({ keys, resampleEveryMs: resampleEveryMs(config) }) }),
    networkDevices: {
      byDevEui: (env, euis) => catalog.devicesByDevEui(env, euis),
      create: (env, keyId, wanted) => autoDevices.create(env, keyId, wanted),
    },
    ...(options.clock ? { clock: options.clock } : {}),
  });
}

/**
 * Creates the InfluxDB schema now, or, while InfluxDB is unreachable, keeps trying in the
 * background (history writes fail and their jobs retry meanwhile; nothing is lost).
 * `firstAttempt` settles (never rejects) once the first try succeeded or failed.
 */
function keepEnsuringSchema(
  influx: InfluxClient,
  config: Pick<Config, 'rawRetention' | 'rollupRetention' | 'rollupResampleEvery'>,
  log: Logger,
): { firstAttempt: Promise<void>; close(this: void): void } {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const attempt = (): Promise<void> =>
    ensureHistorySchema(influx, {
      rawRetention: config.rawRetention,
      rollupRetention: config.rollupRetention,
      resampleEvery: config.rollupResampleEvery,
    }).then(
      () => log.debug('InfluxDB schema in place'),
      (err: unknown) => {
        log.warn({ err }, 'InfluxDB schema not created yet; retrying');
        if (!stopped) timer = setTimeout(() => void attempt(), SCHEMA_RETRY_MS);
      },
    );
  return {
    firstAttempt: attempt(),
    close: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}

/** VIGIL_ROLLUP_RESAMPLE_EVERY in ms (its schema accepts INF, which no rollup query has). */
function resampleEveryMs(config: Pick<Config, 'rollupResampleEvery'>): number {
  return parseDurationMs(config.rollupResampleEvery) ?? 3_600_000;
}
