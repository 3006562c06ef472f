/**
 * Server-side request forgery guard for webhook and Slack URLs: a channel's URL must not reach
 * this machine or the networks behind it — no address that is not public (special-addresses.ts)
 * unless VIGIL_NOTIFY_ALLOWED_HOSTS admits it on the URL's port (a host name, an address or a CIDR,
 * each with one port). The host is resolved once and every address it resolves to is checked;
 * delivery then connects to the checked address (pinned-request.ts), so a second lookup cannot
 * swap in another one (DNS rebinding).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';
import { parseAllowedTarget, type AllowedTarget, type IpAddress } from '../lib/allowed-targets.ts';
import { embeddedIpv4, nonPublicRange } from './special-addresses.ts';

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

/** Where a checked URL may be reached. */
export interface CheckedTarget {
  url: URL;
  address: ResolvedAddress;
}

export type GuardResult =
  | { ok: true; target: CheckedTarget }
  /** `retryable`: the name did not resolve now (a later attempt may succeed). */
  | { ok: false; reason: string; retryable: boolean };

export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

const systemResolver: Resolver = async (host) =>
  (await dnsLookup(host, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

function parseTargets(entries: readonly string[]): AllowedTarget[] {
  return entries.map((entry) => {
    const parsed = parseAllowedTarget(entry);
    if (!parsed.ok) throw new Error(`VIGIL_NOTIFY_ALLOWED_HOSTS: ${parsed.problem}`);
    return parsed.target;
  });
}

/** The address and, for an IPv6 address that carries one, its IPv4 address: an entry may name either. */
function identities(ip: IpAddress): IpAddress[] {
  const carried = ip instanceof ipaddr.IPv6 ? embeddedIpv4(ip) : undefined;
  return carried ? [ip, carried.ipv4] : [ip];
}

const inRange = (ip: IpAddress, [base, bits]: [IpAddress, number]): boolean =>
  ip.kind() === base.kind() && (ip as ipaddr.IPv4).match(base as ipaddr.IPv4, bits);

/** The URL's port, the scheme's default when it names none. */
const portOf = (url: URL): number => Number(url.port) || (url.protocol === 'https:' ? 443 : 80);

export interface AddressGuard {
  /** Checks a URL for a channel (at creation and before every delivery). */
  check(url: string): Promise<GuardResult>;
}

/** `allowedHosts`: VIGIL_NOTIFY_ALLOWED_HOSTS entries (throws on one without a port). */
export function createAddressGuard(deps: {
  allowedHosts: readonly string[];
  resolve?: Resolver;
}): AddressGuard {
  const targets = parseTargets(deps.allowedHosts);
  const resolve = deps.resolve ?? systemResolver;
  const hostAllowed = (host: string, port: number) =>
    targets.some((t) => t.kind === 'host' && t.port === port && t.host === host);
  const addressAllowed = (ip: IpAddress, port: number) =>
    targets.some(
      (t) => t.kind === 'range' && t.port === port && identities(ip).some((i) => inRange(i, t.range)),
    );

  async function addressesOf(host: string): Promise<ResolvedAddress[] | GuardResult> {
    if (ipaddr.isValid(host))
      return [{ address: host, family: ipaddr.parse(host).kind() === 'ipv6' ? 6 : 4 }];
    try {
      return await resolve(host);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'lookup failed';
      return { ok: false, reason: `host ${host} cannot be resolved (${code})`, retryable: true };
    }
  }

  /** Why one of the addresses may not be reached on `port`, or undefined when all may. */
  function refusal(host: string, port: number, addresses: ResolvedAddress[]): string | undefined {
    for (const { address } of addresses) {
      const ip = ipaddr.parse(address);
      const range = nonPublicRange(ip);
      if (range !== undefined && !addressAllowed(ip, port))
        return `${host} reaches ${address} (${range}), which is not allowed; list the host in VIGIL_NOTIFY_ALLOWED_HOSTS with its port (${address.includes(':') ? `[${address}]` : address}:${port}) to allow it`;
    }
    return undefined;
  }

  return {
    async check(text) {
      let url: URL;
      try {
        url = new URL(text);
      } catch {
        return { ok: false, reason: 'not a valid URL', retryable: false };
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') {
        return { ok: false, reason: 'only http and https URLs are allowed', retryable: false };
      }
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1').toLowerCase();
      const port = portOf(url);
      const addresses = await addressesOf(host);
      if (!Array.isArray(addresses)) return addresses;
      const first = addresses[0];
      if (!first) return { ok: false, reason: `host ${host} has no address`, retryable: true };
      const refused = hostAllowed(host, port) ? undefined : refusal(host, port, addresses);
      if (refused !== undefined) return { ok: false, reason: refused, retryable: false };
      return { ok: true, target: { url, address: first } };
    },
  };
}
