/** Redis keys of the ingestion entries. */
export interface IngestKeys {
  readonly prefix: string;
  /** List, newest first, capped: ingestion outcomes (JSON). */
  ingestLog(env: string): string;
}

export function ingestKeys(prefix: string): IngestKeys {
  return { prefix, ingestLog: (env) => `${prefix}:env:${env}:ingest-log` };
}
