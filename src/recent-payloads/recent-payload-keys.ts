/**
 * The keys of recent payloads. A device's list shares the device's hash tag, as its tenancy and
 * state keys have it.
 */
export interface RecentPayloadKeys {
  readonly prefix: string;
  /** List of a device's recent payloads, newest first (entries of recent-payload-codec.ts). */
  recentPayloads(env: string, device: string): string;
  /**
   * Counter of an environment, raised by every write that kept payloads of it: the console's live
   * pages watch it, as the payloads come a moment after the rest of their step.
   */
  recentPayloadsWritten(env: string): string;
}

export function recentPayloadKeys(prefix: string): RecentPayloadKeys {
  return {
    prefix,
    recentPayloads: (env, d) => `${prefix}:dev:{${env}/${d}}:recent-payloads`,
    recentPayloadsWritten: (env) => `${prefix}:env:${env}:recent-payloads-written`,
  };
}
