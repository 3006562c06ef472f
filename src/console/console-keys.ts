/**
 * Redis keys of the web console: sessions (under their environment, so that deleting the
 * environment deletes them) and sign-in attempts per client address.
 */
export interface ConsoleKeys {
  readonly prefix: string;
  /**
   * Hash of one session, addressed by the SHA-256 hex of its secret: username, csrf, createdMs,
   * endMs (the absolute end); the key expires after the idle time, renewed on each request.
   */
  consoleSession(env: string, secretHash: string): string;
  /** Counter of sign-in attempts from one client address (its group) in the current minute. */
  consoleSignIns(addressGroup: string): string;
  /** SCAN patterns of the console's keys of an environment (deleted with it). */
  consolePatterns(env: string): string[];
}

export function consoleKeys(prefix: string): ConsoleKeys {
  const p = prefix;
  return {
    prefix: p,
    consoleSession: (env, h) => `${p}:env:${env}:console-session:${h}`,
    consoleSignIns: (a) => `${p}:console-sign-ins:${a}`,
    consolePatterns: (env) => [`${p}:env:${env}:console-session:*`],
  };
}
