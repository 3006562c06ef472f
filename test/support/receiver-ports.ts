/**
 * Loopback ports held for a test file's HTTP receivers. VIGIL_NOTIFY_ALLOWED_HOSTS admits ports,
 * not hosts, and a notifier reads it when it starts — often before the test's receivers exist. So
 * each test file binds a few loopback ports when it loads (RECEIVER_ALLOW_LIST names them), its
 * HTTP receivers listen on those very sockets, and a port goes back to the pool when its test ends.
 */
import { createServer, type AddressInfo, type Server } from 'node:net';

/** Ports held per test file: more receivers than this alive at once in one test fail loudly. */
const HELD_PORTS = 8;

/** A listening socket on a loopback port, not keeping the process alive while it waits for a receiver. */
async function holdPort(port = 0): Promise<Server> {
  const holder = createServer();
  await new Promise<void>((resolve, reject) => {
    holder.once('error', reject);
    holder.listen(port, '127.0.0.1', () => resolve());
  });
  return holder.unref();
}

const heldPorts: Server[] = await Promise.all(Array.from({ length: HELD_PORTS }, () => holdPort()));
export const portOf = (s: Server) => (s.address() as AddressInfo).port;

/** VIGIL_NOTIFY_ALLOWED_HOSTS admitting this file's receivers (and no other loopback port). */
export const RECEIVER_ALLOW_LIST = heldPorts.map((s) => `127.0.0.1:${portOf(s)}`).join(',');

/** Takes a held port for a receiver (its socket, still listening, becomes the receiver's). */
export function takeHeldPort(): Server {
  const holder = heldPorts.shift();
  if (!holder) throw new Error(`a test started more than ${HELD_PORTS} HTTP receivers at once`);
  return holder;
}

/** Holds a receiver's port again once its test is over; a port taken meanwhile leaves the pool. */
export async function releasePort(port: number): Promise<void> {
  try {
    heldPorts.push(await holdPort(port));
  } catch {
    // Another process bound it since: the pool is one port smaller, which only a test with
    // HELD_PORTS receivers at once would notice (loudly, in takeHeldPort).
  }
}
