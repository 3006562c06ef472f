/**
 * Redis keys of alerting: an environment's channels and routes, its delivery log, what flood
 * control and quiet hours hold for digests. (The audit log is src/audit's, the alarm index
 * itself is kept by the state scripts: StateKeys.alarmIndex.) Every key of an environment starts with
 * `<prefix>:env:<env>:` (deleted with the environment, src/keys.ts). BullMQ keeps the notification
 * jobs under its own prefix, `<prefix>:bull` (queue `notifications`).
 */
export interface AlertingKeys {
  readonly prefix: string;
  /** Hash channel name → JSON ChannelRecord (secrets encrypted). */
  channels(env: string): string;
  /** Hash route name → JSON RouteRecord. */
  routes(env: string): string;
  /** List of delivery attempts, newest first, JSON DeliveryAttempt (capped). */
  notifyLog(env: string): string;
  /** Hash of one channel's current flood window: start (epoch ms), count. */
  floodWindow(env: string, channelId: string): string;
  /**
   * Hash of one digest batch: count, due (epoch ms), sealed ("1" once its digest was built); with
   * `:events`, a list of the newest (at most 100) held events as JSON; with `:ids`, the set of
   * held event ids (admit.lua).
   */
  digestBatch(env: string, batchId: string): string;
  /** The prefix every batch id is appended to (admit.lua builds the keys of a window's batch). */
  digestBatchPrefix(env: string): string;
  /** The BullMQ prefix of the notification queue. */
  bullPrefix(): string;
  /** SCAN patterns of every per-batch and per-window key of an environment. */
  notifyPatterns(env: string): string[];
}

export function alertingKeys(prefix: string): AlertingKeys {
  const p = prefix;
  return {
    prefix: p,
    channels: (env) => `${p}:env:${env}:channels`,
    routes: (env) => `${p}:env:${env}:routes`,
    notifyLog: (env) => `${p}:env:${env}:notify-log`,
    floodWindow: (env, channelId) => `${p}:env:${env}:notify:flood:${channelId}`,
    digestBatch: (env, batchId) => `${p}:env:${env}:notify:batch:${batchId}`,
    digestBatchPrefix: (env) => `${p}:env:${env}:notify:batch:`,
    bullPrefix: () => `${p}:bull`,
    notifyPatterns: (env) => [`${p}:env:${env}:notify:*`],
  };
}
