/**
 * Which TCP addresses a process listens on, as the kernel reports them (`ss` from iproute2): what a
 * test checks when it asks whether a server is reachable from other machines.
 */
import { execFileSync } from 'node:child_process';
import ipaddr from 'ipaddr.js';

export interface Listener {
  address: string;
  port: number;
  pid: number;
}

/** Every listening TCP socket of the processes `pids` (all of the machine's when empty). */
export function listenersOf(pids: readonly number[]): Listener[] {
  const out = execFileSync('ss', ['-Hltnp'], { encoding: 'utf8' });
  const listeners: Listener[] = [];
  for (const line of out.split('\n')) {
    // LISTEN 0 511 127.0.0.1:8080 0.0.0.0:* users:(("node",pid=123,fd=21))
    const local = line.trim().split(/\s+/)[3];
    const pid = Number(/pid=(\d+)/.exec(line)?.[1]);
    if (local === undefined || (pids.length > 0 && !pids.includes(pid))) continue;
    const colon = local.lastIndexOf(':');
    const address = local
      .slice(0, colon)
      .replace(/^\[|\]$/g, '')
      .replace(/%.*$/, '');
    listeners.push({ address, port: Number(local.slice(colon + 1)), pid });
  }
  return listeners;
}

/** True for an address only this machine reaches (127.0.0.0/8, ::1). */
export const isLoopback = (address: string): boolean =>
  ipaddr.isValid(address) && ipaddr.process(address).range() === 'loopback';
