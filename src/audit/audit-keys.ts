/**
 * Redis keys of the audit log. Every key of an environment starts with `<prefix>:env:<env>:`, so it
 * is deleted with the environment (src/keys.ts).
 */
export interface AuditKeys {
  readonly prefix: string;
  /**
   * Stream of an environment's audit entries, oldest first; each entry's id is `<ms>-<seq>` of the
   * change's time and its one field `e` the entry as JSON (audit-log.ts). Trimmed by time.
   */
  auditLog(env: string): string;
  /** The list the audit log was kept in before it was a stream (migrated, src/state/audit-migration.ts). */
  legacyAuditList(env: string): string;
}

export function auditKeys(prefix: string): AuditKeys {
  const p = prefix;
  return {
    prefix: p,
    auditLog: (env) => `${p}:env:${env}:audit-log`,
    legacyAuditList: (env) => `${p}:env:${env}:audit`,
  };
}
