import { describe, expect, it } from 'vitest';
import { createAddressGuard, type Resolver } from '../../../src/alerting/address-guard.ts';

/** A resolver for the test's names (a fake of the DNS port; the real one is used in integration tests). */
const names: Record<string, string[]> = {
  'public.example': ['93.184.216.34'],
  'rebind.example': ['93.184.216.34', '10.1.2.3'],
  'six.example': ['2606:2800:220:1:248:1893:25c8:1946'],
  'inside.example': ['192.168.0.5'],
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
  ])('refuses %s', async (url) => {
    const r = await guard.check(url);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.retryable).toBe(false);
  });

  it.each(['https://public.example/hook', 'http://93.184.216.34:8080/x', 'https://six.example/x'])(
    'allows %s and connects to the address it checked',
    async (url) => {
      const r = await guard.check(url);
      expect(r.ok).toBe(true);
      if (r.ok)
        expect(r.target.address.address).toBe(names[new URL(url).hostname]?.[0] ?? new URL(url).hostname);
    },
  );

  it('refuses other schemes, and retries a name that does not resolve now', async () => {
    expect(await guard.check('ftp://public.example/')).toMatchObject({ ok: false, retryable: false });
    expect(await guard.check('not a url')).toMatchObject({ ok: false, retryable: false });
    expect(await guard.check('http://missing.example/')).toMatchObject({ ok: false, retryable: true });
  });

  it('allows listed hosts, addresses and CIDRs', async () => {
    const allowing = createAddressGuard({
      allowedHosts: ['127.0.0.1', 'inside.example', '10.0.0.0/8'],
      resolve,
    });
    expect((await allowing.check('http://127.0.0.1:9/x')).ok).toBe(true);
    expect((await allowing.check('http://127.0.0.2:9/x')).ok).toBe(false);
    expect((await allowing.check('http://inside.example/x')).ok).toBe(true);
    expect((await allowing.check('http://10.200.0.1/x')).ok).toBe(true);
    expect((await allowing.check('http://rebind.example/x')).ok).toBe(true);
    expect((await allowing.check('http://169.254.169.254/x')).ok).toBe(false);
  });
});
