/**
 * Display names are free text, but never hold control characters: they reach email subjects,
 * chat messages and terminals, where CR/LF forge lines and headers. The tenancy admin refuses them
 * with INVALID_INPUT, and so the `vigil device` commands and provisioning, before anything is
 * written.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { adminDeps, createKeys } from '../../src/keys.ts';
import { createTenancyAdmin } from '../../src/tenancy/tenancy-admin.ts';
import { createCliHarness, type CliHarness } from './cli-run.ts';

let cli: CliHarness;
let dir: string;

/** Environment doors, definition Door, device door_1 ("Front door"), with `displayName` for door_2 when given. */
function environments(door2DisplayName?: string): string {
  return [
    'environments:',
    '  - name: doors',
    '    definitions: [door.yaml]',
    '    devices:',
    '      - { name: door_1, displayName: Front door, definition: Door }',
    ...(door2DisplayName === undefined
      ? []
      : [`      - { name: door_2, displayName: ${JSON.stringify(door2DisplayName)}, definition: Door }`]),
  ].join('\n');
}

const HOSTILE = [
  'x\r\nBcc: attacker@example.test',
  'Front door\nURGENT: reset your password',
  'tab\there',
  'esc\u001b[31mred',
  'Front\u202edoor',
  'line\u2028separator',
  '',
  'x'.repeat(201),
];

beforeAll(async () => {
  cli = createCliHarness();
  dir = mkdtempSync(join(tmpdir(), 'vigil-display-names-'));
  writeFileSync(join(dir, 'door.js'), 'function parsePayload(s) { return JSON.parse(s); }');
  writeFileSync(
    join(dir, 'door.yaml'),
    ['name: Door', 'manufacturer: Acme', "version: '1'", 'parser: door.js', 'dataPoints:'].join('\n') +
      '\n  - { name: State, displayName: State, dataType: string }\n',
  );
  writeFileSync(join(dir, 'environments.yaml'), environments());
  const applied = await cli.run(['provision', 'apply', dir]);
  expect(applied.code, applied.stderr).toBe(0);
});

afterAll(async () => {
  await cli.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('device display names', () => {
  it('are refused with INVALID_INPUT when they hold control characters, and nothing is written', async () => {
    const admin = createTenancyAdmin(adminDeps(cli.redis, createKeys(cli.prefix)));
    const before = await cli.snapshot();
    for (const displayName of HOSTILE) {
      const device = { name: 'door_2', definitionName: 'Door', definitionIsPublic: false, displayName };
      await expect(admin.createDevice('doors', device), JSON.stringify(displayName)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      await expect(admin.putDevice('doors', device), JSON.stringify(displayName)).rejects.toMatchObject({
        code: 'INVALID_INPUT',
      });
      await expect(
        admin.updateDevice('doors', 'door_1', { displayName }),
        JSON.stringify(displayName),
      ).rejects.toMatchObject({ code: 'INVALID_INPUT' });
    }
    expect(await cli.snapshot()).toEqual(before);

    // Any other text is a display name: accents, quotes, symbols, emoji.
    const updated = await admin.updateDevice('doors', 'door_1', { displayName: 'Voordeur «Zuid» — 2e 🚪' });
    expect(updated.displayName).toBe('Voordeur «Zuid» — 2e 🚪');
    await admin.updateDevice('doors', 'door_1', { displayName: 'Front door' });
  });

  it('are refused by `vigil device create|update` and `vigil provision apply` alike', async () => {
    const before = await cli.snapshot();
    const device = (verb: string, name: string, displayName: string) =>
      cli.run(['device', verb, '--env', 'doors', '--name', name, '--display-name', displayName]);
    const created = await cli.run([
      ...['device', 'create', '--env', 'doors', '--name', 'door_2', '--definition', 'Door'],
      ...['--display-name', 'x\r\nBcc: attacker@example.test'],
    ]);
    const updated = await device('update', 'door_1', 'Front\u202edoor');
    writeFileSync(join(dir, 'environments.yaml'), environments('x\r\nBcc: attacker@example.test'));
    const provisioned = await cli.run(['provision', 'apply', dir]);
    expect([created.code, updated.code, provisioned.code]).toEqual([1, 1, 1]);
    for (const r of [created, updated, provisioned]) expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(await cli.snapshot()).toEqual(before);
  });
});
