import type { IncomingMessage } from 'node:http';
import { describe, expect, it } from 'vitest';
import { clientAddress } from '../../../src/api/client-address.ts';
import { loadConfig } from '../../../src/config/load-config.ts';
import { addressGroup } from '../../../src/tenancy/login.ts';

/** A request as clientAddress sees it: a socket peer and perhaps an X-Forwarded-For header. */
const request = (peer: string | undefined, forwardedFor?: string) =>
  ({
    socket: { remoteAddress: peer },
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  }) as unknown as IncomingMessage;

const trust = (value: string) => loadConfig({ VIGIL_TRUST_PROXY: value }).trustProxy;

describe('clientAddress', () => {
  it('is the socket peer by default, whatever X-Forwarded-For says', () => {
    expect(trust('false')).toBe(false);
    expect(clientAddress(request('10.0.0.7', '198.51.100.1'), trust('false'))).toBe('10.0.0.7');
    expect(clientAddress(request(undefined, '198.51.100.1'), trust('true'))).toBe('');
  });

  it('follows express trust proxy: true, a hop count, or a list of proxies', () => {
    const req = request('127.0.0.1', '203.0.113.9, 198.51.100.1, 10.0.0.2');
    expect(clientAddress(req, trust('true'))).toBe('203.0.113.9');
    expect(clientAddress(req, trust('0'))).toBe('127.0.0.1');
    expect(clientAddress(req, trust('1'))).toBe('10.0.0.2');
    expect(clientAddress(req, trust('2'))).toBe('198.51.100.1');
    expect(clientAddress(req, trust('loopback'))).toBe('10.0.0.2');
    expect(clientAddress(req, trust('loopback, 10.0.0.0/8'))).toBe('198.51.100.1');
    // An untrusted peer's header is not read at all.
    expect(clientAddress(request('192.0.2.5', '198.51.100.1'), trust('loopback'))).toBe('192.0.2.5');
  });

  it('refuses a VIGIL_TRUST_PROXY that is no address list', () => {
    expect(() => trust('nginx')).toThrow(/VIGIL_TRUST_PROXY/);
    expect(() => trust('10.0.0.0/40')).toThrow(/VIGIL_TRUST_PROXY/);
  });
});

describe('addressGroup', () => {
  it.each([
    ['192.0.2.1', '192.0.2.1'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['2001:db8:1:2::10', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff:0:0:1', '2001:db8:1:2::/64'],
    ['', 'unknown'],
    ['not an address', 'unknown'],
  ])('counts %j as %j', (address, group) => {
    expect(addressGroup(address)).toBe(group);
  });
});
