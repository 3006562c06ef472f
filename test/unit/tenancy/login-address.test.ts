import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load-config.ts';
import { addressGroup } from '../../../src/tenancy/login.ts';

const trust = (value: string) => loadConfig({ VIGIL_TRUST_PROXY: value }).trustProxy;

describe('VIGIL_TRUST_PROXY', () => {
  it("reads the forms express's trust proxy takes", () => {
    expect(trust('false')).toBe(false);
    expect(trust('true')).toBe(true);
    expect(trust('2')).toBe(2);
    expect(trust('loopback, 10.0.0.0/8')).toEqual(['loopback', '10.0.0.0/8']);
  });

  it('refuses a value that is no address list', () => {
    for (const value of ['nginx', '10.0.0.0/40']) {
      expect(() => trust(value), value).toThrow(
        expect.objectContaining({ code: 'CONFIG_INVALID', variables: ['VIGIL_TRUST_PROXY'] }) as Error,
      );
    }
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
