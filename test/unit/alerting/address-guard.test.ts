import { describe, expect, it } from 'vitest';
import { createAddressGuard, type Resolver } from '../../../src/alerting/address-guard.ts';
import { ConfigError, loadConfig } from '../../../src/config/load-config.ts';

/** A resolver for the test's names (a fake of the DNS port; the real one is used in integration tests). */
const names: Record<string, string[]> = {
  'public.example': ['93.184.216.34'],
  'rebind.example': ['93.184.216.34', '10.1.2.3'],
  'six.example': ['2606:2800:220:1:248:1893:25c8:1946'],
  'inside.example': ['192.168.0.5'],
  'compat.example': ['::7f00:1'],
  'nat64.example': ['64:ff9b::a9fe:a9fe'],
};
const resolve: Resolver = (host) => {
  const found = names[host];
  if (!found) return Promise.reject(Object.assign(new Error('not found'), { code: 'ENOTFOUND' }));
  return Promise.resolve(found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 })));
};

describe('address guard', () => {
  const guard = createAddressGuard({ allowedHosts: [], resolve });

  it.each([
    'http://127.0.0.1/x',
    'http://127.8.9.10/x',
    'http://10.0.0.1/x',
    'http://172.16.5.4/x',
    'http://192.168.1.1/x',
    'http://169.254.169.254/latest/meta-data',
    'http://100.64.0.1/x',
    'http://0.0.0.0/x',
    'http://[::1]/x',
    'http://[fe80::1]/x',
    'http://[fd12:3456::1]/x',
    'http://[::ffff:10.0.0.1]/x',
    'http://[::]/x',
    'http://224.0.0.1/x',
    'http://inside.example/x',
    'http://rebind.example/x',
    // IPv6 forms that carry an IPv4 address are judged by it.
    'http://[::7f00:1]/x',
    'http://[::a9fe:a9fe]/latest/meta-data',
    'http://[::ffff:0:7f00:1]/x',
    'http://[64:ff9b::a9fe:a9fe]/x',
    'http://[2002:7f00:1::1]/x',
    'http://[2002:a9fe:a9fe::]/x',
    'http://compat.example/x',
    'http://nat64.example/x',
    // IPv4 special-purpose ranges.
    'http://198.18.0.1/x',
    'http://198.19.255.254/x',
    'http://100.127.255.1/x',
    'http://0.1.2.3/x',
    'http://192.0.0.8/x',
    'http://192.0.2.1/x',
    'http://198.51.100.7/x',
    'http://203.0.113.9/x',
    'http://192.88.99.1/x',
    'http://239.255.255.250/x',
    'http://240.0.0.1/x',
    'http://255.255.255.255/x',
    'http://2130706433/x',
    'http://0x7f.1/x',
    // IPv6 special-purpose ranges, and everything outside global unicast 2000::/3.
    'http://[fec0::1]/x',
    'http://[fefe::1]/x',
    'http://[64:ff9b:1::a]/x',
    'http://[100::1]/x',
    'http://[2001::1]/x',
    'http://[2001:2::1]/x',
    'http://[2001:db8::1]/x',
    'http://[3fff::1]/x',
    'http://[5f00::1]/x',
    'http://[4000::1]/x',
    'http://[ff02::1]/x',
  ])('refuses %s', async (url) => {
    const r = await guard.check(url);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.retryable).toBe(false);
  });

  it.each([
    'https://public.example/hook',
    'http://93.184.216.34:8080/x',
    'https://six.example/x',
    'http://[::ffff:93.184.216.34]/x',
    'http://[64:ff9b::5db8:d822]/x',
    'http://[2002:5db8:d822::1]/x',
  ])('allows %s and connects to the address it checked', async (url) => {
    const r = await guard.check(url);
    expect(r.ok).toBe(true);
    const host = new URL(url).hostname.replace(/^\[(.*)\]$/, '$1');
    if (r.ok) expect(r.target.address.address).toBe(names[host]?.[0] ?? host);
  });

  it('refuses other schemes, and retries a name that does not resolve now', async () => {
    expect(await guard.check('ftp://public.example/')).toMatchObject({ ok: false, retryable: false });
    expect(await guard.check('not a url')).toMatchObject({ ok: false, retryable: false });
    expect(await guard.check('http://missing.example/')).toMatchObject({ ok: false, retryable: true });
  });

  it('allows listed hosts, addresses and CIDRs on the port each names, and no other port', async () => {
    const allowing = createAddressGuard({
      allowedHosts: [
        '127.0.0.1:9000',
        '[::1]:9000',
        'inside.example:443',
        '10.0.0.0/8:8443',
        '[fd00::/8]:443',
      ],
      resolve,
    });
    const allowed = async (url: string) => (await allowing.check(url)).ok;
    expect(await allowed('http://127.0.0.1:9000/x')).toBe(true);
    expect(await allowed('http://[::ffff:127.0.0.1]:9000/x')).toBe(true);
    expect(await allowed('http://[::1]:9000/x')).toBe(true);
    expect(await allowed('https://inside.example/x')).toBe(true);
    expect(await allowed('http://10.200.0.1:8443/x')).toBe(true);
    expect(await allowed('http://rebind.example:8443/x')).toBe(true);
    expect(await allowed('https://[fd12::1]/x')).toBe(true);

    expect(await allowed('http://127.0.0.1:9001/x')).toBe(false);
    expect(await allowed('http://127.0.0.1/x')).toBe(false);
    expect(await allowed('http://[::1]:8086/query')).toBe(false);
    expect(await allowed('http://127.0.0.2:9000/x')).toBe(false);
    expect(await allowed('http://inside.example/x')).toBe(false);
    expect(await allowed('http://10.200.0.1/x')).toBe(false);
    expect(await allowed('http://rebind.example/x')).toBe(false);
    expect(await allowed('http://[fd12::1]:8443/x')).toBe(false);
    expect(await allowed('http://169.254.169.254:9000/x')).toBe(false);
  });

  it.each([
    '127.0.0.1',
    'inside.example',
    '10.0.0.0/8',
    '::1',
    '[::1]',
    '127.0.0.1:0',
    '127.0.0.1:65536',
    'a b:80',
  ])('refuses the allow-list entry %s at start: every entry names its port', (entry) => {
    let refusal: unknown;
    try {
      loadConfig({ VIGIL_NOTIFY_ALLOWED_HOSTS: entry });
    } catch (err) {
      refusal = err;
    }
    expect(refusal).toBeInstanceOf(ConfigError);
    expect(refusal).toMatchObject({ code: 'CONFIG_INVALID', variables: ['VIGIL_NOTIFY_ALLOWED_HOSTS'] });
  });
});
