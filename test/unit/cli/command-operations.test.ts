/**
 * Every command of `vigil` that changes something within an environment has a management
 * operation of the API (the command runs it, in this process or over HTTP): a new write command
 * without one fails here. The system-level commands — environments, public definitions,
 * provisioning, the dead-letter queue — stay on the server, by name; local ones touch no Vigil.
 */
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../../src/cli/run-cli.ts';
import type { Runtime } from '../../../src/cli/runtime.ts';
import { alertingOperations } from '../../../src/management/alerting-operations.ts';
import { auditOperations } from '../../../src/management/audit-operations.ts';
import { callerOperations } from '../../../src/management/caller-operations.ts';
import { credentialOperations } from '../../../src/management/credential-operations.ts';
import { definitionOperations } from '../../../src/management/definition-operations.ts';
import { deviceImportOperations } from '../../../src/management/device-import.ts';
import { deviceOperations } from '../../../src/management/device-operations.ts';
import { preparserOperations } from '../../../src/management/preparser-operations.ts';
import { thresholdOperations } from '../../../src/management/threshold-operations.ts';
import { userOperations } from '../../../src/management/user-operations.ts';

/** Each write command and the operation it runs. */
const WRITES: Record<string, string> = {
  'apikey create': '/apikeys/create',
  'apikey revoke': '/apikeys/revoke',
  'apikey rotate': '/apikeys/rotate',
  'apikey update': '/apikeys/update',
  'token create': '/tokens/create',
  'token revoke': '/tokens/revoke',
  'user create': '/users/create',
  'user delete': '/users/delete',
  'user disable': '/users/disable',
  'user enable': '/users/enable',
  'user password': '/users/password',
  'user role': '/users/role',
  'user mfa enable': '/users/enableMfa',
  'user mfa disable': '/users/resetMfa',
  'definition apply': '/definitions/apply',
  'definition publish': '/definitions/publish',
  'definition rollback': '/definitions/rollback',
  'definition delete': '/definitions/delete',
  'preparser set': '/preparser/set',
  'preparser enable': '/preparser/enable',
  'preparser disable': '/preparser/disable',
  'preparser remove': '/preparser/remove',
  'device create': '/devices/create',
  'device update': '/devices/update',
  'device delete': '/devices/delete',
  'device import': '/devices/import',
  'threshold set': '/thresholds/set',
  'threshold clear': '/thresholds/clear',
  'sensor suppress': '/sensors/suppress',
  'sensor unsuppress': '/sensors/unsuppress',
  'channel create': '/channels/create',
  'channel delete': '/channels/delete',
  'channel rotate-secret': '/channels/rotateSecret',
  'channel test': '/channels/test',
  'route create': '/routes/create',
  'route delete': '/routes/delete',
  'notify retry': '/notifications/retry',
};

/** The server's own, never an environment's operation. */
const SYSTEM = new Set([
  'env create',
  'env delete',
  'env list',
  'provision apply',
  'queue status',
  'queue dead-letters',
  'queue requeue',
]);

/** Commands that only read (over the API too), or touch no Vigil at all. */
const READS_AND_LOCAL = new Set([
  'apikey list',
  'token list',
  'user list',
  'definition list',
  'definition show',
  'definition versions',
  'definition test',
  'preparser show',
  'device list',
  'device export',
  'channel list',
  'route list',
  'notify failed',
  'notify log',
  'audit',
  'ingest log',
  'profile set',
  'profile list',
  'profile remove',
]);

function leaves(cmd: Command, prefix: string[] = []): string[] {
  if (cmd.commands.length === 0) return [prefix.join(' ')];
  return cmd.commands.flatMap((c) => leaves(c, [...prefix, c.name()]));
}

// Operations use their dependencies only when run.
const none = {} as never;

describe('vigil commands and the management API', () => {
  it('gives every command that changes an environment an operation of the API, the system-level ones excepted', () => {
    const operations = new Set(
      [
        ...deviceOperations(none),
        ...deviceImportOperations(none),
        ...definitionOperations(none),
        ...thresholdOperations(none),
        ...preparserOperations(none),
        ...credentialOperations(none),
        ...userOperations(none),
        ...alertingOperations(none),
        ...auditOperations(none),
        ...callerOperations(),
      ].map((op) => op.path),
    );
    const commands = leaves(buildProgram({} as Runtime));
    const unclassified = commands.filter((c) => !(c in WRITES) && !SYSTEM.has(c) && !READS_AND_LOCAL.has(c));
    expect(unclassified).toEqual([]);
    const missing = Object.entries(WRITES).filter(([, path]) => !operations.has(path));
    expect(missing).toEqual([]);
    // The table names no command that does not exist.
    expect(
      [...Object.keys(WRITES), ...SYSTEM, ...READS_AND_LOCAL].filter((c) => !commands.includes(c)),
    ).toEqual([]);
  });
});
