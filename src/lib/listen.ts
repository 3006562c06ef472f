import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Raised when a port cannot be bound; the message names the setting to change. */
export class PortInUseError extends Error {
  override name = 'PortInUseError';
}

/** Listens and resolves with the bound port; EADDRINUSE becomes a one-line PortInUseError. */
export async function listen(server: Server, port: number, host: string, setting: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (err: NodeJS.ErrnoException) => {
      server.off('listening', onListening);
      if (err.code === 'EADDRINUSE') {
        reject(
          new PortInUseError(
            `port ${port} (${setting}) is already in use — is Vigil already running? Stop it or set ${setting}.`,
          ),
        );
      } else reject(err);
    };
    const onListening = () => {
      server.off('error', onError);
      resolve((server.address() as AddressInfo).port);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(port, host);
  });
}

/** Closes an HTTP server, ending idle keep-alive connections at once and busy ones after `graceMs`. */
export async function closeServer(server: Server, graceMs = 2000): Promise<void> {
  if (!server.listening) return;
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  const timer = setTimeout(() => server.closeAllConnections(), graceMs);
  await closed;
  clearTimeout(timer);
}
