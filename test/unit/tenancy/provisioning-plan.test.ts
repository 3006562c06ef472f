import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { expandVariables, parseProvisioningFile } from '../../../src/tenancy/provisioning-plan.ts';

const KEY = 'vk_abcdefghijklmnopqrstuvwxyz012345';

describe('expandVariables', () => {
  it('replaces ${VAR} and falls back to ${VAR:-default}', () => {
    expect(expandVariables('${A}-${B:-two}', { A: 'one' })).toBe('one-two');
    expect(expandVariables('${B:-two}', { B: 'set' })).toBe('set');
    expect(expandVariables('no refs', {})).toBe('no refs');
  });

  it('fails naming an unset variable without a default', () => {
    expect(() => expandVariables('${MISSING}', {})).toThrow(/MISSING/);
  });
});

describe('parseProvisioningFile', () => {
  it('reads the demo with its defaults and secrets from the environment', () => {
    const text = readFileSync('config/provisioning/demo/environments.yaml', 'utf8');
    const plan = parseProvisioningFile(text, { DEMO_API_KEY: KEY });
    expect(plan.publicDefinitions).toEqual([]);
    const [demo] = plan.environments;
    expect(demo).toMatchObject({
      name: 'demo',
      locale: 'en',
      definitions: ['definitions/comfort-sensors.yaml', 'definitions/greenhouse-node.yaml'],
    });
    expect(demo?.preparser).toEqual({ file: 'preparsers/split-measurements.js', enabled: false });
    expect(demo?.apiKeys).toEqual([{ name: 'demo', key: KEY }]);
    expect(demo?.users).toEqual([{ username: 'demo', password: 'demo-password', role: 'admin' }]);
    expect(demo?.devices.map((d) => [d.name, d.displayName])).toEqual([
      ['device_1_hallway', 'Hallway'],
      ['device_2_rd_office', 'Open-plan R&D Office'],
      ['device_3_reception', 'Reception'],
      ['lora_greenhouse', 'Greenhouse (LoRaWAN)'],
    ]);
    expect(demo?.devices[3]?.labels).toEqual({ devEui: '70b3d57ed005a1b2', site: 'amsterdam' });
    expect(demo?.devices[2]?.availabilityMinutes).toBe(2);
    expect([...(demo?.devices[1]?.thresholds.keys() ?? [])]).toEqual(['CO2']);
  });

  it('fills defaults for an environment that lists only its name', () => {
    const plan = parseProvisioningFile('environments:\n  - name: bare\n', {});
    expect(plan.environments[0]).toEqual({
      name: 'bare',
      locale: 'en',
      definitions: [],
      apiKeys: [],
      tokens: [],
      users: [],
      devices: [],
      alerting: { channels: [], routes: [] },
    });
  });

  it.each([
    ['environments:\n  - name: Bad_Env\n', /invalid environment name/],
    ['environments:\n  - name: a\n  - name: a\n', /listed twice/],
    ['environments:\n  - name: a\n    locale: fr\n', /locale/],
    ['environments:\n  - name: a\n    colour: red\n', /colour|unrecognized/i],
    [
      'environments:\n  - name: a\n    devices:\n      - { name: " x", definition: D }\n',
      /invalid device name/,
    ],
    ['environments:\n  - name: a\n    apiKeys:\n      - { name: k, key: "${NOPE}" }\n', /NOPE/],
    [
      'environments:\n  - name: a\n    tokens:\n      - { name: t, token: vt_x, expires: 30d }\n',
      /never or an ISO/,
    ],
    ['environments: [\n', /environments\.yaml:\d+:\d+/],
    [
      'environments:\n  - name: a\n    tokens:\n      - { name: t, token: x, scopes: [write] }\n',
      /must include read/,
    ],
    ['environments:\n  - name: a\n    tokens:\n      - { name: t, token: x, scopes: [admin] }\n', /scopes/],
    ['environments:\n  - name: a\n    users:\n      - { username: u, password: p, role: superuser }\n', /role/],
  ])('refuses %j with a one-line reason', (text, reason) => {
    expect(() => parseProvisioningFile(text, {})).toThrow(reason);
  });

  it('keeps thresholds of data points named like Object.prototype members', () => {
    const plan = parseProvisioningFile(
      [
        'environments:',
        '  - name: constructor',
        '    devices:',
        '      - name: __proto__',
        '        definition: toString',
        '        thresholds:',
        '          __proto__: [{ status: WARNING, above: 1 }]',
        '          constructor: [{ status: WARNING, above: 2 }]',
        '          hasOwnProperty: [{ status: WARNING, above: 3 }]',
        '',
      ].join('\n'),
      {},
    );
    const device = plan.environments[0]?.devices[0];
    expect(device?.name).toBe('__proto__');
    expect([...(device?.thresholds ?? new Map())]).toEqual([
      ['__proto__', [{ status: 'WARNING', above: 1 }]],
      ['constructor', [{ status: 'WARNING', above: 2 }]],
      ['hasOwnProperty', [{ status: 'WARNING', above: 3 }]],
    ]);
    expect(() =>
      parseProvisioningFile(
        'environments:\n  - name: a\n    devices:\n      - { name: d, definition: D, thresholds: [1] }\n',
        {},
      ),
    ).toThrow(/data point names/);
  });

  it('reads token expiry as never (0) or an ISO time', () => {
    const plan = parseProvisioningFile(
      'environments:\n  - name: a\n    tokens:\n      - { name: t, token: x }\n      - { name: u, token: y, expires: "2030-01-01T00:00:00Z" }\n',
      {},
    );
    expect(plan.environments[0]?.tokens.map((t) => t.expiresMs)).toEqual([0, Date.UTC(2030, 0, 1)]);
  });

  it('gives tokens scope read and users the operator role unless the file says otherwise', () => {
    const plan = parseProvisioningFile(
      [
        'environments:',
        '  - name: a',
        '    tokens:',
        '      - { name: t, token: x }',
        '      - { name: w, token: y, scopes: [write, read] }',
        '    users:',
        '      - { username: o, password: p }',
        '      - { username: v, password: p, role: viewer }',
        '',
      ].join('\n'),
      {},
    );
    expect(plan.environments[0]?.tokens.map((t) => t.scopes)).toEqual([['read'], ['read', 'write']]);
    expect(plan.environments[0]?.users.map((u) => u.role)).toEqual(['operator', 'viewer']);
  });
});
