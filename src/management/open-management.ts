/**
 * Builds the management operations of a process from its settings and connection factory: the api
 * role (which serves them and hands them to the console) and the `vigil` command in its direct mode
 * build them the same way, so both run the same code. Its connections are the factory's, closed
 * with it; what it opens besides (alerting's queue and delivery adapters) its `close()` releases.
 */
import type { AlertingAdmin, AlertingAdminConfig } from '../alerting/alerting-admin.ts';
import { createAuditLog } from '../audit/audit-log.ts';
import type { Config } from '../config/schema.ts';
import { adminDeps, type Keys } from '../keys.ts';
import type { Redis } from '../redis/connect.ts';
import type { Connections } from '../redis/connections.ts';
import { createLogger, type Logger } from '../log/logger.ts';
import { createTenancyAdmin } from '../tenancy/tenancy-admin.ts';
import { createTenancyStore } from '../tenancy/tenancy-store.ts';
import { alertingOperations } from './alerting-operations.ts';
import { auditOperations } from './audit-operations.ts';
import { callerOperations } from './caller-operations.ts';
import { credentialOperations } from './credential-operations.ts';
import { definitionOperations } from './definition-operations.ts';
import { definitionTrialOperations } from './definition-trial-operations.ts';
import { createDefinitionTrials } from './definition-trials.ts';
import { deviceImportOperations } from './device-import.ts';
import { deviceOperations } from './device-operations.ts';
import { createManagement, type Management } from './management.ts';
import { preparserOperations } from './preparser-operations.ts';
import { thresholdOperations } from './threshold-operations.ts';
import { createWorkbenchLimits } from './trial-limits.ts';
import { createTrialRunner } from './trial-runner.ts';
import { userOperations } from './user-operations.ts';

/** The settings the management operations read. */
export type ManagementConfig = Pick<
  Config,
  | 'auditRetentionDays'
  | 'sandboxTimeoutMs'
  | 'sandboxMemoryMb'
  | 'sandboxMaxIsolates'
  | 'sandboxIsolateIdleMs'
  | 'workbenchRunsPerMinutePerSession'
  | 'workbenchRunsPerMinutePerEnv'
> &
  AlertingAdminConfig;

/** The management operations of a process, with what releases what they opened. */
export interface OpenedManagement extends Management {
  /** Closes what the operations opened on first use (alerting's queue and delivery adapters, the trial thread). */
  close(): Promise<void>;
}

export function openManagement(deps: {
  config: ManagementConfig;
  keys: Keys;
  /** The process's shared command connection. */
  redis: Redis;
  connections: Connections;
  log?: Logger;
}): OpenedManagement {
  const { config, keys, redis, connections } = deps;
  const transactions = connections.command('vigil-admin-transactions');
  const bulk = connections.reads('vigil-admin-bulk');
  const admin = createTenancyAdmin({ ...adminDeps(redis, keys), transactions, bulk });
  const store = createTenancyStore({ redis, keys });
  const audit = createAuditLog({ redis, keys, retentionMs: config.auditRetentionDays * 86_400_000 });
  // Alerting's administration brings BullMQ and delivery adapters: loaded and opened on the first
  // alerting operation, not by every command and process that manages something else.
  let alerting: Promise<AlertingAdmin> | undefined;
  const openAlerting = () =>
    (alerting ??= import('../alerting/alerting-admin.ts').then(({ createAlertingAdmin }) =>
      createAlertingAdmin({ admin: { ...adminDeps(redis, keys), transactions }, keys, config, connections }),
    ));
  // /definitions/run and /replay: parsers run in a thread of their own, started on the first trial.
  const runner = createTrialRunner({
    sandbox: {
      timeoutMs: config.sandboxTimeoutMs,
      memoryLimitMb: config.sandboxMemoryMb,
      maxIsolates: config.sandboxMaxIsolates,
      isolateIdleMs: config.sandboxIsolateIdleMs,
    },
    log: deps.log ?? createLogger('silent'),
  });
  const trials = createDefinitionTrials({
    runner,
    limits: createWorkbenchLimits({
      redis,
      prefix: keys.prefix,
      perSessionPerMinute: config.workbenchRunsPerMinutePerSession,
      perEnvPerMinute: config.workbenchRunsPerMinutePerEnv,
    }),
    replayLimit: Math.min(config.workbenchRunsPerMinutePerSession, config.workbenchRunsPerMinutePerEnv),
    store,
    redis,
    keys,
  });
  const management = createManagement({
    audit,
    catalogChanged: admin.catalogChanged,
    ...(deps.log ? { log: deps.log } : {}),
    operations: [
      ...deviceOperations({ redis, keys, devices: admin }),
      ...definitionOperations({ definitions: admin, store }),
      ...definitionTrialOperations({ trials, definitions: admin }),
      ...deviceImportOperations({ store: createTenancyStore({ redis: bulk, keys }), devices: admin }),
      ...thresholdOperations({ devices: admin }),
      ...preparserOperations({ admin }),
      ...credentialOperations({ credentials: admin }),
      ...userOperations({ users: admin }),
      ...alertingOperations({ alerting: openAlerting, requireEnv: (env) => admin.requireEnv(env) }),
      ...auditOperations({ audit }),
      ...callerOperations(),
    ],
  });
  return {
    ...management,
    async close() {
      await runner.close();
      await (await alerting?.catch(() => undefined))?.close();
    },
  };
}
