/**
 * Every Redis key builder of Vigil in one object, for the composition root (main.ts), the `vigil`
 * command, tests and benchmarks. Each part is owned, and documented, by the folder whose data it
 * names; modules take only the part they use (`keys: QueueKeys`, …).
 */
import { alertingKeys, type AlertingKeys } from './alerting/alerting-keys.ts';
import { auditKeys, type AuditKeys } from './audit/audit-keys.ts';
import { exportKeys, type ExportKeys } from './api/export-keys.ts';
import { consoleKeys, type ConsoleKeys } from './console/console-keys.ts';
import { eventKeys, type EventKeys } from './events/event-keys.ts';
import { dropDeviceEvents } from './events/drop-device-events.ts';
import { historyKeys, type HistoryKeys } from './history/history-keys.ts';
import { ingestKeys, type IngestKeys } from './ingest/ingest-keys.ts';
import { queueKeys, type QueueKeys } from './queue/queue-keys.ts';
import { dropDeviceAlarms } from './state/alarm-index.ts';
import { stateKeys, type StateKeys } from './state/state-keys.ts';
import { addUnheard } from './state/unheard.ts';
import type { Redis } from './redis/connect.ts';
import type { AdminDeps } from './tenancy/admin-support.ts';
import { tenancyKeys, type DependentData, type TenancyKeys } from './tenancy/tenancy-keys.ts';
import { recentPayloadKeys, type RecentPayloadKeys } from './recent-payloads/recent-payload-keys.ts';

export type Keys = TenancyKeys &
  StateKeys &
  EventKeys &
  IngestKeys &
  QueueKeys &
  ExportKeys &
  AlertingKeys &
  HistoryKeys &
  ConsoleKeys &
  RecentPayloadKeys &
  AuditKeys;

export function createKeys(prefix: string): Keys {
  return {
    ...tenancyKeys(prefix),
    ...stateKeys(prefix),
    ...eventKeys(prefix),
    ...ingestKeys(prefix),
    ...queueKeys(prefix),
    ...exportKeys(prefix),
    ...alertingKeys(prefix),
    ...historyKeys(prefix),
    ...consoleKeys(prefix),
    ...recentPayloadKeys(prefix),
    ...auditKeys(prefix),
  };
}

/** What is kept outside the tenancy for a device or an environment, deleted with it. */
export function dependentData(keys: Keys): DependentData {
  return {
    createDevices(pipe, env, devices) {
      addUnheard(pipe, keys, env, devices);
    },
    deleteDevice(multi, env, device) {
      dropDeviceEvents(multi, keys, env, device);
      multi.del(keys.deviceState(env, device), keys.recentPayloads(env, device));
      multi.zrem(keys.availabilityDeadlines(), `${env}\n${device}`);
      multi.zrem(keys.deviceTimers(), `${env}\n${device}`);
      multi.zrem(keys.unheardDevices(env), device);
      dropDeviceAlarms(multi, keys, env, device);
    },
    deleteEnvironment(multi, env) {
      multi.del(
        keys.envEvents(env),
        keys.ingestLog(env),
        keys.recentPayloadsWritten(env),
        keys.unheardDevices(env),
      );
      multi.del(keys.channels(env), keys.routes(env), keys.notifyLog(env));
      multi.del(keys.alarmIndex(env), keys.alarmRecords(env), keys.auditLog(env), keys.legacyAuditList(env));
    },
    environmentPatterns: (env) => [
      keys.exports(env, '*'),
      ...keys.notifyPatterns(env),
      ...keys.consolePatterns(env),
    ],
  };
}

/** What the tenancy administration needs: the tenancy's keys and what depends on them. */
export function adminDeps(redis: Redis, keys: Keys): AdminDeps {
  return { redis, keys, dependents: dependentData(keys) };
}
