/**
 * Layout 4: each environment's audit log is a stream kept by time (src/audit) instead of a list
 * capped by count. The entries of the old list move over, oldest first, with ids of their own
 * times, and the list goes — per environment in one atomic step, so a migration that stopped
 * half-way resumes with the environments whose list is still there.
 */
import type { AuditKeys } from '../audit/audit-keys.ts';
import { withAuditAppend } from '../audit/audit-log.ts';
import type { TenancyKeys } from '../tenancy/tenancy-keys.ts';
import type { Migration } from './migrations.ts';

/**
 * KEYS[1] the old list (newest first), KEYS[2] the stream; ARGV[1] the list's length when it was
 * read, ARGV[2..] time (epoch ms), entry pairs, oldest first. Appends them and drops the list, or
 * returns -1 when the list changed since it was read (read it again).
 */
const MOVE_LIST = withAuditAppend(`
if redis.call('LLEN', KEYS[1]) ~= tonumber(ARGV[1]) then return -1 end
for i = 2, #ARGV, 2 do appendAudit(KEYS[2], tonumber(ARGV[i]), 0, ARGV[i + 1]) end
redis.call('DEL', KEYS[1])
return tonumber(ARGV[1])`);

/** The time of an old entry; 0 for one without a readable time (it goes first). */
function timeOf(json: string): number {
  try {
    const ms = Date.parse((JSON.parse(json) as { atUTC?: string }).atUTC ?? '');
    return Number.isFinite(ms) ? ms : 0;
  } catch {
    return 0;
  }
}

export const moveAuditLogsToStreams: Migration<AuditKeys & TenancyKeys> = {
  version: 4,
  description: 'keep each audit log as a stream by time instead of a capped list',
  async run({ redis, keys, log, signal }) {
    let moved = 0;
    for (const env of await redis.smembers(keys.envs())) {
      signal.throwIfAborted();
      for (;;) {
        const entries = (await redis.lrange(keys.legacyAuditList(env), 0, -1)).reverse();
        if (entries.length === 0) break;
        const args = entries.flatMap((json) => [timeOf(json), json]);
        const n = (await redis.eval(
          MOVE_LIST,
          2,
          keys.legacyAuditList(env),
          keys.auditLog(env),
          entries.length,
          ...args,
        )) as number;
        if (n >= 0) {
          moved += n;
          break;
        }
      }
    }
    log.info({ moved }, 'audit entries moved to streams');
  },
};
