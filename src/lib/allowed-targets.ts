/**
 * Entries of an outbound allow-list (VIGIL_NOTIFY_ALLOWED_HOSTS): each admits one port of a host
 * name, an address or a CIDR range — `hooks.internal:443`, `127.0.0.1:9000`, `10.0.0.0/8:8443`,
 * `[::1]:9000`, `[fd00::/8]:443` (IPv6 in brackets). An entry without a port is refused: a host on
 * every port would admit whatever else listens there (a database, an ops endpoint).
 */
import ipaddr from 'ipaddr.js';

/** An address as ipaddr.js parses it. */
export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;

/** One allowed target: a host name or an address range, on one port. */
export type AllowedTarget =
  { kind: 'host'; host: string; port: number } | { kind: 'range'; range: [IpAddress, number]; port: number };

/** A parsed entry, or the problem with it. */
export type AllowedTargetResult = { ok: true; target: AllowedTarget } | { ok: false; problem: string };

/** A DNS name: dot-separated labels of letters, digits and inner hyphens. */
const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/;

const EXAMPLES = 'such as 127.0.0.1:9000, hooks.internal:443, 10.0.0.0/8:8443 or [::1]:9000';

/** An address as a range of its own; an IPv4-mapped IPv6 address counts as its IPv4 address. */
function rangeOf(text: string, bracketed: boolean): [IpAddress, number] | undefined {
  try {
    if (text.includes('/')) {
      const [base, bits] = ipaddr.parseCIDR(text);
      if (bracketed !== (base.kind() === 'ipv6')) return undefined;
      return [base, bits];
    }
    if (bracketed ? !ipaddr.IPv6.isValid(text) : !ipaddr.IPv4.isValidFourPartDecimal(text)) return undefined;
    const ip = ipaddr.process(text);
    return [ip, ip.kind() === 'ipv4' ? 32 : 128];
  } catch {
    return undefined;
  }
}

/** Splits `host:port` or `[address]:port`; undefined port when the entry names none. */
function split(entry: string): { host: string; bracketed: boolean; port: string | undefined } {
  const bracket = /^\[([^\]]*)\](?::(.*))?$/.exec(entry);
  if (bracket) return { host: bracket[1] ?? '', bracketed: true, port: bracket[2] };
  const colon = entry.lastIndexOf(':');
  if (colon < 0) return { host: entry, bracketed: false, port: undefined };
  return { host: entry.slice(0, colon), bracketed: false, port: entry.slice(colon + 1) };
}

/** Parses one entry (case-insensitive); the problem says what a valid entry looks like. */
export function parseAllowedTarget(text: string): AllowedTargetResult {
  const entry = text.trim().toLowerCase();
  const { host, bracketed, port } = split(entry);
  if (!bracketed && host.includes(':'))
    return {
      ok: false,
      problem: `${entry}: write an IPv6 address in brackets with its port, e.g. [::1]:9000`,
    };
  if (port === undefined)
    return {
      ok: false,
      problem: `${entry} names no port: an entry admits one port of a host, ${EXAMPLES}`,
    };
  const portNumber = /^\d{1,5}$/.test(port) ? Number(port) : NaN;
  if (!(portNumber >= 1 && portNumber <= 65535))
    return { ok: false, problem: `${entry}: the port must be a number from 1 to 65535` };
  const range = rangeOf(host, bracketed);
  if (range) return { ok: true, target: { kind: 'range', range, port: portNumber } };
  if (!bracketed && !host.includes('/') && !/^[\d.]+$/.test(host) && HOST_NAME.test(host))
    return { ok: true, target: { kind: 'host', host, port: portNumber } };
  return { ok: false, problem: `${entry}: not a host name, address or CIDR with a port, ${EXAMPLES}` };
}
