import { ReplyError } from 'ioredis';

/**
 * The code of a Redis error reply: its first word (`BUSYGROUP`, `NOGROUP`, `WRONGTYPE`, a script's
 * own `STATE_LAYOUT_UNKNOWN`…); undefined for anything that is not an error reply (a lost
 * connection, a timeout).
 */
export function replyCode(err: unknown): string | undefined {
  if (!(err instanceof (ReplyError as ErrorConstructor))) return undefined;
  return err.message.split(' ', 1)[0];
}
