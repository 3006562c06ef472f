/**
 * The message of something thrown, for text a person reads (a CLI line, a delivery's answer, a
 * dead-letter reason). Logs take the error itself (`{ err }`), whose stack and cause pino keeps.
 */
export const messageOf = (err: unknown): string => (err instanceof Error ? err.message : String(err));
