/**
 * The address of the client behind a request: the socket's peer, or — when VIGIL_TRUST_PROXY says
 * which proxies to believe — the address they forwarded in `X-Forwarded-For`, exactly as express
 * computes `req.ip` with the same `trust proxy` value (proxy-addr does the work for both).
 */
import type { IncomingMessage } from 'node:http';
import proxyAddr from 'proxy-addr';
import type { TrustProxy } from '../config/schema.ts';

type Trust = (address: string, hop: number) => boolean;

const compiled = new WeakMap<string[], Trust>();

/** express's compileTrust: true trusts every hop, n the n nearest, a list the proxies in it. */
function trustOf(trustProxy: true | number | string[]): Trust {
  if (trustProxy === true) return () => true;
  if (typeof trustProxy === 'number') return (_address, hop) => hop < trustProxy;
  let trust = compiled.get(trustProxy);
  if (!trust) {
    trust = proxyAddr.compile(trustProxy);
    compiled.set(trustProxy, trust);
  }
  return trust;
}

/** The client's address; '' when the socket has already gone. */
export function clientAddress(req: IncomingMessage, trustProxy: TrustProxy): string {
  if (trustProxy === false) return req.socket.remoteAddress ?? '';
  // The peer is undefined once the socket has gone; proxy-addr would throw on it.
  if (req.socket.remoteAddress === undefined) return '';
  return proxyAddr(req, trustOf(trustProxy));
}
