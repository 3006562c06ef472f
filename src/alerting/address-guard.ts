/**
 * Server-side request forgery guard for webhook and Slack URLs: a channel's URL must not reach
 * this machine or the networks behind it (loopback, private, link-local, unique-local, and every
 * other non-unicast range) unless its host is in VIGIL_NOTIFY_ALLOWED_HOSTS. The host is resolved
 * once and every address it resolves to is checked; delivery then connects to the checked address
 * (pinned-request.ts), so a second lookup cannot swap in another one (DNS rebinding).
 */
import { lookup as dnsLookup } from 'node:dns/promises';
import ipaddr from 'ipaddr.js';

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

type Allowance =
  { kind: 'host'; host: string } | { kind: 'cidr'; range: [ipaddr.IPv4 | ipaddr.IPv6, number] };

function parseAllowance(entry: string): Allowance {
  if (entry.includes('/')) return { kind: 'cidr', range: ipaddr.parseCIDR(entry) };
  if (ipaddr.isValid(entry)) {
    const ip = ipaddr.process(entry);
    return { kind: 'cidr', range: [ip, ip.kind() === 'ipv4' ? 32 : 128] };
  }
  return { kind: 'host', host: entry.toLowerCase() };
}

function inRange(ip: ipaddr.IPv4 | ipaddr.IPv6, [base, bits]: [ipaddr.IPv4 | ipaddr.IPv6, number]): boolean {
  return ip.kind() === base.kind() && (ip as ipaddr.IPv4).match(base as ipaddr.IPv4, bits);
}

export interface AddressGuard {
  /** Checks a URL for a channel (at creation and before every delivery). */
  check(url: string): Promise<GuardResult>;
}

export function createAddressGuard(deps: {
  allowedHosts: readonly string[];
  resolve?: Resolver;
}): AddressGuard {
  const allowances = deps.allowedHosts.map(parseAllowance);
  const resolve = deps.resolve ?? systemResolver;
  const hostAllowed = (host: string) => allowances.some((a) => a.kind === 'host' && a.host === host);
  const addressAllowed = (ip: ipaddr.IPv4 | ipaddr.IPv6) =>
    ip.range() === 'unicast' || allowances.some((a) => a.kind === 'cidr' && inRange(ip, a.range));

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
      let addresses: ResolvedAddress[];
      if (ipaddr.isValid(host)) {
        addresses = [{ address: host, family: ipaddr.parse(host).kind() === 'ipv6' ? 6 : 4 }];
      } else {
        try {
          addresses = await resolve(host);
        } catch (err) {
          const code = (err as NodeJS.ErrnoException).code ?? 'lookup failed';
          return { ok: false, reason: `host ${host} cannot be resolved (${code})`, retryable: true };
        }
      }
      const first = addresses[0];
      if (!first) return { ok: false, reason: `host ${host} has no address`, retryable: true };
      if (!hostAllowed(host)) {
        const refused = addresses.find((a) => !addressAllowed(ipaddr.process(a.address)));
        if (refused) {
          const range = ipaddr.process(refused.address).range();
          return {
            ok: false,
            reason: `${host} reaches ${refused.address} (${range}), which is not allowed; list the host in VIGIL_NOTIFY_ALLOWED_HOSTS to allow it`,
            retryable: false,
          };
        }
      }
      return { ok: true, target: { url, address: first } };
    },
  };
}
