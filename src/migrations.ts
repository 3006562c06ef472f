/**
 * Every migration of the data Vigil keeps in Redis, oldest first, for the composition root and the
 * `vigil` command: src/state/migrations.ts stores the layout version and runs them. Each folder
 * writes the migrations of its own data beside it; this list puts them in order, as keys.ts puts
 * the key builders together. docs/operations.md#upgrades shows how to add one.
 */
import type { Keys } from './keys.ts';
import { buildAlarmIndexes } from './state/alarm-index-migration.ts';
import { latestLayout, type Migration } from './state/migrations.ts';
import { repackPoints } from './state/point-layout-migration.ts';
import { moveAuditLogsToStreams } from './state/audit-migration.ts';
import { giveDefinitionsVersions } from './state/definition-version-migration.ts';
import { keepUnheardDevices } from './state/unheard.ts';
import { claimDevEuis } from './state/dev-eui-migration.ts';

export const MIGRATIONS: readonly Migration<Keys>[] = [
  buildAlarmIndexes,
  repackPoints,
  moveAuditLogsToStreams,
  giveDefinitionsVersions,
  keepUnheardDevices,
  claimDevEuis,
];

/** The layout of Redis data this version of Vigil reads and writes. */
export const DATA_LAYOUT = latestLayout(MIGRATIONS);
