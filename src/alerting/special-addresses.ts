/**
 * Which addresses are not public, after the IANA IPv4 and IPv6 Special-Purpose Address Registries
 * and the IPv6 Address Space registry. ipaddr.js's `range()` names most special ranges; what it
 * leaves as `unicast` is added here, and IPv6 addresses that carry an IPv4 address are judged by
 * that address:
 *
 * - IPv4-mapped `::ffff:0:0/96`, IPv4-translated `::ffff:0:0:0/96`, IPv4-compatible `::/96`,
 *   NAT64 `64:ff9b::/96`: the last 32 bits; 6to4 `2002::/16`: bits 16–47.
 * - IPv4 besides ipaddr.js's ranges: benchmarking `198.18.0.0/15`.
 * - IPv6 besides ipaddr.js's ranges: site-local `fec0::/10`, local-use NAT64 `64:ff9b:1::/48`,
 *   discard-only `100::/64`, IETF protocol assignments `2001::/23` (Teredo, benchmarking, ORCHID),
 *   documentation `3fff::/20`, and everything outside global unicast `2000::/3`.
 */
import ipaddr from 'ipaddr.js';
import type { IpAddress } from '../lib/allowed-targets.ts';

const V6 = (cidr: string): [ipaddr.IPv6, number] => ipaddr.IPv6.parseCIDR(cidr);

/** ipaddr.js's range lists (its typings do not export the type). */
type RangeList<T> = Record<string, [T, number] | [T, number][]>;

const MORE_V4: RangeList<ipaddr.IPv4> = {
  benchmarking: ipaddr.IPv4.parseCIDR('198.18.0.0/15'),
};

const MORE_V6: RangeList<ipaddr.IPv6> = {
  siteLocal: V6('fec0::/10'),
  localNat64: V6('64:ff9b:1::/48'),
  discardOnly: V6('100::/64'),
  ietfProtocolAssignments: V6('2001::/23'),
  documentation: [V6('2001:db8::/32'), V6('3fff::/20')],
};

const GLOBAL_UNICAST_V6 = V6('2000::/3');

/** What `subnetMatch` answers for an address in none of the ranges. */
const PUBLIC = 'public';

/** The IPv6 forms that carry an IPv4 address, with where it sits (index of the first 16-bit part). */
const CARRIERS: [string, [ipaddr.IPv6, number], number][] = [
  ['ipv4Mapped', V6('::ffff:0:0/96'), 6],
  ['ipv4Translated', V6('::ffff:0:0:0/96'), 6],
  ['ipv4Compatible', V6('::/96'), 6],
  ['nat64', V6('64:ff9b::/96'), 6],
  ['6to4', V6('2002::/16'), 1],
];

/** The IPv4 address an IPv6 address carries, and the form that carries it. */
export function embeddedIpv4(ip: ipaddr.IPv6): { ipv4: ipaddr.IPv4; form: string } | undefined {
  for (const [form, range, at] of CARRIERS) {
    if (!ip.match(range)) continue;
    const high = ip.parts[at] ?? 0;
    const low = ip.parts[at + 1] ?? 0;
    return { ipv4: new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]), form };
  }
  return undefined;
}

/**
 * The name of the special range `ip` is in (`loopback`, `private`, `benchmarking`, …), or
 * undefined for a public unicast address.
 */
export function nonPublicRange(ip: IpAddress): string | undefined {
  if (ip instanceof ipaddr.IPv4) {
    const range = ip.range();
    if (range !== 'unicast') return range;
    const more = ipaddr.subnetMatch(ip, MORE_V4, PUBLIC);
    return more === PUBLIC ? undefined : more;
  }
  const range = ip.range();
  if (range === 'loopback' || range === 'unspecified') return range;
  const carried = embeddedIpv4(ip);
  if (carried) {
    const inner = nonPublicRange(carried.ipv4);
    return inner === undefined ? undefined : `${inner} in ${carried.form}`;
  }
  if (range !== 'unicast') return range;
  const more = ipaddr.subnetMatch(ip, MORE_V6, PUBLIC);
  if (more !== PUBLIC) return more;
  return ip.match(GLOBAL_UNICAST_V6) ? undefined : 'reserved';
}
