/**
 * Coalesces a socket's writes of one event-loop turn into one system call. The broker writes each
 * PUBACK on its own; when a micro-batch reaches Redis, the PUBACKs of all its payloads are written
 * in the same turn, and a client with many messages in flight gets them in one `writev` instead of
 * one `write` each (a tenth of the broker's CPU went to those calls).
 */
import type { Socket } from 'node:net';

export function coalesceWrites(socket: Socket): void {
  const write = socket.write.bind(socket) as (...args: unknown[]) => boolean;
  let corked = false;
  const uncork = () => {
    corked = false;
    socket.uncork();
  };
  socket.write = (...args: unknown[]) => {
    if (!corked && !socket.destroyed) {
      corked = true;
      socket.cork();
      process.nextTick(uncork);
    }
    return write(...args);
  };
}
